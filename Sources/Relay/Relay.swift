// Module Relay: replaced by its implementation.
