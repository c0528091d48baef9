// Fuzz target: APNs' error answers (Sources/APNsCore/APNsResponse.swift):
// the JSON body's reason and timestamp, and a `Retry-After` value.
//
// Input: [status selector][Retry-After length][Retry-After bytes][body].
//
// Built by scripts/fuzz with SwiftPM (Fuzz/README.md); a plain `swift build`
// makes it a replay tool: `apns-answer-fuzzer <input file>…` runs the checks.

import APNsCore
import FuzzSupport

private let statuses = [200, 400, 403, 404, 405, 410, 413, 429, 500, 503, 502]

private func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let status = statuses[Int(input.byte()) % statuses.count]
    let retryAfter = input.bytes(Int(input.byte()))
    let body = input.rest()
    // nghttp2 hands header values over as bytes; the connection reads them as a String.
    let value = String(decoding: retryAfter, as: UTF8.self)
    let seconds = APNsDelivery.retryAfterSeconds(value[...].utf8)
    trace("retry-after \(describe(retryAfter)): \(String(describing: seconds))")
    require(seconds == referenceSeconds(value), "Retry-After \(describe(retryAfter)): \(String(describing: seconds))")

    let delivery = APNsDelivery(status: status, apnsID: "ID", body: body, retryAfterSeconds: seconds)
    trace("\(status) \(describe(body)): \(delivery)")
    guard case .apns(let answered, let reason, let apnsID) = delivery.outcome else {
        require(false, "an answer is an APNs outcome: \(delivery.outcome)")
        return 0
    }
    require(answered == status && apnsID == "ID", "status or apns-id changed: \(delivery.outcome)")
    if status == 200 {
        require(reason == nil && delivery.retryAfterSeconds == nil && delivery.unregisteredTimestamp == nil,
                "a 200 carries nothing: \(delivery)")
    } else {
        let parsed = parseAPNsErrorBody(body)
        if status == 410 {
            require(delivery.retryAfterSeconds == nil, "no Retry-After on a final answer")
            require(delivery.unregisteredTimestamp == parsed.timestamp.flatMap { $0 >= 0 ? $0 : nil },
                    "the timestamp is the body's, never negative")
        } else {
            require(delivery.retryAfterSeconds == seconds, "the Retry-After is kept")
            require(delivery.unregisteredTimestamp == nil, "a timestamp only on 410")
        }
        require(reason == parsed.reason.map(APNsReason.init(rawValue:)), "the reason is the body's")
    }
    return 0
}

/// RFC 9110 §10.2.3 delay-seconds, written another way: blanks trimmed,
/// then only ASCII digits, read with overflow as "very long", at most an hour.
private func referenceSeconds(_ value: String) -> Int? {
    var scalars = Array(value.unicodeScalars)
    let blank: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" }
    while let first = scalars.first, blank(first) { scalars.removeFirst() }
    while let last = scalars.last, blank(last) { scalars.removeLast() }
    guard !scalars.isEmpty, scalars.allSatisfy({ $0 >= "0" && $0 <= "9" }) else { return nil }
    var digits = String.UnicodeScalarView()
    digits.append(contentsOf: scalars)
    return min(Int(String(digits)) ?? Int.max, APNsDelivery.maxRetryAfterSeconds)
}

// MARK: - Entry: libFuzzer's with SWIFTPM_FUZZING, else the replay tool's (Fuzz/README.md)

#if SWIFTPM_FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAPNsAnswer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { fuzzOne(data, size) }
#else
@main enum APNsAnswerReplay { static func main() { replayInputFiles(tool: "apns-answer-fuzzer", fuzzOne) } }
#endif
