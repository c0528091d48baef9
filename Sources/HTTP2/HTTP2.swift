// Module HTTP2: replaced by its implementation.
