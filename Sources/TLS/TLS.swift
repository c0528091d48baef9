// Module TLS: replaced by its implementation.
