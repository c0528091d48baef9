// Module RelayCore: replaced by its implementation.
