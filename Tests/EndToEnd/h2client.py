"""A client for the raw HTTP/2 tests at the API port: the `h2` library's
state machine over a blocking socket, cleartext (h2c with prior knowledge)
or TLS."""

import socket
import ssl
import time

import h2.config
import h2.connection
import h2.events


class H2Client:
    """One HTTP/2 connection (h2's state machine over a blocking socket),
    cleartext or TLS with the ALPN protocols given (None: no ALPN)."""

    def __init__(self, port, tls_ca=None, alpn=("h2",), client_cert=None, timeout=10):
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        if tls_ca:
            context = ssl.create_default_context(cafile=tls_ca)
            if alpn is not None:
                context.set_alpn_protocols(list(alpn))
            if client_cert:
                context.load_cert_chain(*client_cert)
            sock = context.wrap_socket(sock, server_hostname="localhost")
        self.sock = sock
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True,
                                                                               header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.responses = {}
        self.ended = set()
        self.resets = {}
        self.goaway = None
        self.closed = False
        self.flush()

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, method, path, headers=(), body=b"", authority="relay.test"):
        stream = self.conn.get_next_available_stream_id()
        fields = [(":method", method), (":path", path), (":scheme", "https"), (":authority", authority)]
        fields += [(name.lower(), value) for name, value in headers]
        if body:
            fields.append(("content-length", str(len(body))))
        self.conn.send_headers(stream, fields, end_stream=not body)
        if body:
            self.conn.send_data(stream, body, end_stream=True)
        self.flush()
        return stream

    def pump(self, until, deadline_seconds=15):
        deadline = time.monotonic() + deadline_seconds
        while not until():
            if self.closed or time.monotonic() > deadline:
                return False
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, ssl.SSLError):
                data = b""
            if not data:
                self.closed = True
                continue
            for event in self.conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    headers = dict(event.headers)
                    self.responses[event.stream_id] = {"status": int(headers[":status"]), "headers": headers,
                                                       "body": b""}
                elif isinstance(event, h2.events.DataReceived):
                    self.responses[event.stream_id]["body"] += event.data
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    self.ended.add(event.stream_id)
                elif isinstance(event, h2.events.StreamReset):
                    self.resets[event.stream_id] = event.error_code
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.goaway = (event.error_code, event.last_stream_id)
            self.flush()
        return True

    def call(self, method, path, headers=(), body=b"", authority="relay.test"):
        stream = self.request(method, path, headers, body, authority)
        assert self.pump(lambda: stream in self.ended or stream in self.resets), f"no answer on {stream}"
        return self.responses[stream]

    def close(self):
        self.sock.close()


class H2Answer:
    """An HTTP/2 answer with the accessors of relaytest's HTTP/1.1 response."""

    def __init__(self, answer):
        self.status = answer["status"]
        self.headers = answer["headers"]
        self.body = answer["body"]

    def header(self, name):
        return self.headers.get(name.lower())

    def __repr__(self):
        return f"H2Answer({self.status}, {self.headers}, {self.body[:200]!r})"


def h2c_call(port, method, path, headers=(), body=b"", authority="relay.test"):
    """One request on its own cleartext HTTP/2 connection: its answer."""
    client = H2Client(port)
    try:
        return H2Answer(client.call(method, path, headers, body, authority))
    finally:
        client.close()
