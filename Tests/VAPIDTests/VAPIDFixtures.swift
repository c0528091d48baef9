// Fixtures of the VAPID tests: a fake crypto that binds a "signature" to
// its key and message (no OpenSSL here: the module takes its crypto
// injected), JWTs built from parts, and real ones made by py_vapid.

import Base64URL
import HTTPCore
import RelayCore
@testable import VAPID

/// The fake SHA-256: the key's x coordinate (32 bytes, distinct per key).
func fakeHash(_ key: [UInt8]) -> [UInt8] { Array(key.dropFirst().prefix(32)) }

/// The fake ES256 signature of `message` under `key`: 64 bytes that change
/// with every byte of both, so a changed header, claims or key fails.
func fakeSignature(key: [UInt8], message: [UInt8]) -> [UInt8] {
    var state: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in key + message { state = (state ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return (0..<64).map { index in
        state = (state ^ UInt64(index)) &* 0x100_0000_01b3
        return UInt8(truncatingIfNeeded: state >> 29)
    }
}

let fakeCrypto = VAPIDCrypto(sha256: fakeHash) { key, message, signature in
    signature == fakeSignature(key: key, message: message)
}

/// A key of the right shape (0x04 and 64 bytes), distinct per `seed`.
func testKey(_ seed: UInt8) -> [UInt8] { [0x04] + (0..<64).map { UInt8(truncatingIfNeeded: Int($0) * 3 + Int(seed)) } }

let serverKey = testKey(1)
let otherKey = testKey(2)
let audience = "https://relay.example"
let now = 1_800_000_000

/// A JWT from its parts, signed with the fake signature by `signer`.
func jwt(header: String = #"{"typ":"JWT","alg":"ES256"}"#,
         claims: String = #"{"aud":"https://relay.example","exp":1800003600,"sub":"mailto:admin@example.com"}"#,
         signer: [UInt8] = serverKey, signature: [UInt8]? = nil) -> String {
    let signingInput = base64URLEncode(Array(header.utf8)) + "." + base64URLEncode(Array(claims.utf8))
    return signingInput + "." + base64URLEncode(signature ?? fakeSignature(key: signer, message: Array(signingInput.utf8)))
}

/// RFC 8292's header form.
func vapidHeaders(token: String = jwt(), key: [UInt8] = serverKey) -> HTTPHeaders {
    ["Authorization": "vapid t=\(token), k=\(base64URLEncode(key))"]
}

/// Real headers from py_vapid 1.9.6 (pywebpush 2.5.0's signer), made once
/// offline with a fresh P-256 key and checked there with `cryptography`:
///
///     v = Vapid02(); v.generate_keys()
///     claims = {"aud": "https://relay.example:8443", "exp": 1900000000,
///               "sub": "mailto:admin@mastodon.example"}
///     v.sign(claims)                               # vapid t=…,k=…
///     Vapid01(private_key=v.private_key).sign(claims)  # WebPush … + Crypto-Key
///
/// `signatures` are the JWTs' r‖s as Python decoded them; the tests accept
/// exactly those under this key (the signatures real, the verify faked).
enum PyVAPID {
    static let audience = "https://relay.example:8443"
    static let expiry = 1_900_000_000
    static let keyText = "BHFy2wXj4a1CV2LATWMwOtmlIVxLdJIN5bp_0FuRzN45pFsjsfDT8sASrxRvLzTrsdPPuX3byJXg0wgYQn8WRF0"
    static let key = hex("047172db05e3e1ad425762c04d63303ad9a5215c4b74920de5ba7fd05b91ccde39a45b23b1f0d3f2c012af146f2f34ebb1d3cfb97ddbc895e0d30818427f16445d")
    static let signingInput = "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.eyJhdWQiOiJodHRwczovL3JlbGF5LmV4YW1wbGU6ODQ0MyIsImV4cCI6MTkwMDAwMDAwMCwic3ViIjoibWFpbHRvOmFkbWluQG1hc3RvZG9uLmV4YW1wbGUifQ"
    static let vapid02: HTTPHeaders = [
        "Authorization": "vapid t=\(signingInput).6MUiUL-QZxDlOXV4tMagOG0TNBO2si6hlTczbvQwOUNLvBA8kO9T5LCH-tm5IA03ucgq9KD_vmaH_PLsD1zuAA,k=\(keyText)",
    ]
    static let vapid01: HTTPHeaders = [
        "Authorization": "WebPush \(signingInput).vAJFsfVG--P3QKvp1oJ0-CfFJY4Ifh4B3Qk4w9rsYuXBenp2Xgj_q1e7JH8IV4LPq6L5ImRdO_z6FUE8KXtNwA",
        "Crypto-Key": "p256ecdsa=\(keyText)",
    ]
    static let signatures = [
        hex("e8c52250bf906710e5397578b4c6a0386d133413b6b22ea19537336ef43039434bbc103c90ef53e4b087fad9b9200d37b9c82af4a0ffbe6687fcf2ec0f5cee00"),
        hex("bc0245b1f546fbe3f740abe9d68274f827c5258e087e1e01dd0938c3daec62e5c17a7a765e08ffab57bb247f085782cfaba2f922645d3bfcfa15413c297b4dc0"),
    ]
    static let crypto = VAPIDCrypto(sha256: fakeHash) { key, message, signature in
        key == PyVAPID.key && message == Array(PyVAPID.signingInput.utf8) && PyVAPID.signatures.contains(signature)
    }
}

func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}
