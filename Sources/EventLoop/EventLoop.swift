// Module EventLoop: replaced by its implementation.
