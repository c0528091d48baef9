// Module APNsEmulator: replaced by its implementation.
