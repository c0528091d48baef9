// Executable apns-emulator: replaced by its implementation.
