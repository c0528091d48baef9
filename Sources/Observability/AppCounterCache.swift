import Prometheus

/// One loop's counters by app id and slot (a label combination the caller
/// numbers), each made by the registry on first use: what the per-loop
/// recorders of the Web Push path (`RelayMetricsRecorder`) and the provider
/// API (`ProviderMetricsRecorder`) both keep. A registry lookup by name and
/// labels costs about 10,500–12,900 instructions (BENCHMARKS.md, callgrind);
/// a dictionary read hashes the app id (about 350), so the app counted last
/// is kept beside the dictionary: a gorush request's tokens, and most
/// traffic, go to one app. Confined to its loop, like its recorder.
struct AppCounterCache {
    private let slots: Int
    private var byApp: [String: [Counter?]] = [:]
    /// The app counted last and its counters (a copy of its `byApp` entry).
    private var last: (app: String, counters: [Counter?])?

    /// `slots`: how many label combinations each app has.
    init(slots: Int) {
        self.slots = slots
    }

    /// The app's counter for `slot`, made by `make` the first time.
    mutating func counter(app: String, slot: Int, make: () -> Counter) -> Counter {
        if let last, last.app == app, let counter = last.counters[slot] { return counter }
        var counters = byApp[app] ?? Array(repeating: nil, count: slots)
        let counter: Counter
        if let made = counters[slot] {
            counter = made
        } else {
            counter = make()
            counters[slot] = counter
            byApp[app] = counters
        }
        last = (app, counters)
        return counter
    }

    /// How many apps have counters here.
    var apps: Int { byApp.count }

    /// Forgets every app's counters (the registry keeps the series).
    mutating func removeAll() {
        byApp.removeAll()
        last = nil
    }
}
