/// Facts about the HTTP/2 library underneath.
public enum HTTP2Library {
    /// Version of the nghttp2 library linked at run time (e.g. "1.52.0");
    /// also proves that the library is linked.
    public static var nghttp2Version: String { linkedNGHTTP2Version() }
}
