// Executable toot-relay: replaced by its implementation.
