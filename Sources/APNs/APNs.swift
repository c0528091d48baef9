// Module APNs: replaced by its implementation.
