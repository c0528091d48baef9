/// Which APNs service a subscription's notifications go to.
public enum APNsEnvironment: String, Sendable, Equatable {
    case production
    case development
}
