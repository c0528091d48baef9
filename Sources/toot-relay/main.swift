// toot-relay: receives Web Push (RFC 8030) from Mastodon servers and
// forwards each still-encrypted payload to APNs (WIRE.md §1–§3).
//
// Configuration comes from the environment (the Go relay's variable names);
// each variable has a flag that overrides it. Startup problems are one line
// on stderr and exit status 1. SIGTERM/SIGINT: stop accepting, finish what is
// in flight within SHUTDOWN_GRACE, GOAWAY the APNs connections, exit 0.
// The first stdout line is `listening on HOST:PORT` (PORT=0 picks a free port).
import ArgumentParser

TootRelayCommand.main()
