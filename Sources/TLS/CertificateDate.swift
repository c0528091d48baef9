import Glibc

/// A certificate validity date (unix seconds, UTC) as ISO 8601 text,
/// `2021-01-01T00:00:00Z`, without Foundation: the one calendar conversion
/// for dates in credential errors, start-up lines and expiry warnings.
public func certificateDateText(_ unixSeconds: Int) -> String {
    var time = time_t(unixSeconds)
    var fields = tm()
    guard gmtime_r(&time, &fields) != nil else { return "\(unixSeconds) (unix time)" }
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(fields.tm_year + 1900)-\(two(fields.tm_mon + 1))-\(two(fields.tm_mday))T"
        + "\(two(fields.tm_hour)):\(two(fields.tm_min)):\(two(fields.tm_sec))Z"
}

/// The day of `certificateDateText`, `2021-01-01`: for the start-up line
/// that names the certificate's expiry.
public func certificateDayText(_ unixSeconds: Int) -> String {
    String(certificateDateText(unixSeconds).prefix(10))
}
