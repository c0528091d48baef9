import HTTPCore
import RelayCore
import Testing
import XMLRPC

@testable import PyAPNs

@Suite("pyapns' push type")
struct PyAPNsPushTypeTests {
    static func member(_ name: String, _ value: XMLRPCValue) -> XMLRPCMember { XMLRPCMember(name: name, value: value) }

    static let cases: [(name: String, notification: XMLRPCValue, pushType: PyAPNsPushType)] = [
        ("an alert", .structure([member("aps", .structure([member("alert", .string("hi"))]))]), .alert),
        ("a badge alone", .structure([member("aps", .structure([member("badge", .int(3))]))]), .alert),
        ("a sound alone", .structure([member("aps", .structure([member("sound", .string("default"))]))]), .alert),
        ("an alert that is nil", .structure([member("aps", .structure([member("alert", .nil)]))]), .alert),
        ("content-available alone", .structure([member("aps", .structure([member("content-available", .int(1))]))]),
         .background),
        ("an empty aps", .structure([member("aps", .structure([]))]), .background),
        ("an aps that is no struct", .structure([member("aps", .string("x"))]), .background),
        ("no aps at all", .structure([member("x", .int(1))]), .alert),
        ("alert outside aps", .structure([member("alert", .string("hi")), member("aps", .structure([]))]), .background),
    ]

    @Test("a notification asks for attention, else it is a background push", arguments: cases)
    func pushTypeFollowsAPS(_ example: (name: String, notification: XMLRPCValue, pushType: PyAPNsPushType)) {
        #expect(pyAPNsPushType(of: example.notification) == example.pushType, "\(example.name)")
    }

    @Test("a background push carries priority 5, as Apple requires; an alert push leaves the priority to APNs")
    func headersOfEachPushType() {
        #expect(PyAPNsPushType.background.headers == [HTTPField(name: "apns-push-type", value: "background"),
                                                       HTTPField(name: "apns-priority", value: "5")])
        #expect(PyAPNsPushType.alert.headers == [HTTPField(name: "apns-push-type", value: "alert")])
    }
}
