// Module TestSupport: helpers shared by the test targets (throwaway certificates, loopback servers).
