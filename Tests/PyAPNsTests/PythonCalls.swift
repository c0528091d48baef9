// Calls as Python 3.11's xmlrpc.client writes them (pyapns' client.py
// calls `ServerProxy(…, allow_none=True)`), generated with
// `xmlrpc.client.dumps(args, method, allow_none=True)`.

/// pyapns' calls, each as xmlrpc.client writes it.
enum PythonCall {
    case provisionPEM, provisionPath, provisionBytes, notifyOne, notifyLists, feedback

    var document: String {
        switch self {
        case .provisionPEM:
            "<?xml version='1.0'?>\n<methodCall>\n<methodName>provision</methodName>\n<params>\n<param>\n<value><string>myapp</string></value>\n</param>\n<param>\n<value><string>-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n</string></value>\n</param>\n<param>\n<value><string>sandbox</string></value>\n</param>\n<param>\n<value><int>15</int></value>\n</param>\n</params>\n</methodCall>\n"
        case .provisionPath:
            "<?xml version='1.0'?>\n<methodCall>\n<methodName>provision</methodName>\n<params>\n<param>\n<value><string>other</string></value>\n</param>\n<param>\n<value><string>/etc/pyapns/other.pem</string></value>\n</param>\n<param>\n<value><string>production</string></value>\n</param>\n</params>\n</methodCall>\n"
        case .provisionBytes:
            "<?xml version='1.0'?>\n<methodCall>\n<methodName>provision</methodName>\n<params>\n<param>\n<value><string>bytes</string></value>\n</param>\n<param>\n<value><base64>\nLS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0t\nLQo=\n</base64></value>\n</param>\n<param>\n<value><string>production</string></value>\n</param>\n<param>\n<value><int>30</int></value>\n</param>\n</params>\n</methodCall>\n"
        case .notifyOne:
            "<?xml version='1.0'?>\n<methodCall>\n<methodName>notify</methodName>\n<params>\n<param>\n<value><string>myapp</string></value>\n</param>\n<param>\n<value><string>ABCD ABCD ABCD ABCD ABCD ABCD ABCD ABCD ABCD ABCD ABCD ABCD ABCD ABCD ABCD ABCD </string></value>\n</param>\n<param>\n<value><struct>\n<member>\n<name>aps</name>\n<value><struct>\n<member>\n<name>alert</name>\n<value><string>Hello!</string></value>\n</member>\n</struct></value>\n</member>\n</struct></value>\n</param>\n</params>\n</methodCall>\n"
        case .notifyLists:
            "<?xml version='1.0'?>\n<methodCall>\n<methodName>notify</methodName>\n<params>\n<param>\n<value><string>myapp</string></value>\n</param>\n<param>\n<value><array><data>\n<value><string>abababababababababababababababababababababababababababababababab</string></value>\n<value><string>AB CD AB CD AB CD AB CD AB CD AB CD AB CD AB CD AB CD AB CD AB CD AB CD AB CD AB CD AB CD AB CD </string></value>\n</data></array></value>\n</param>\n<param>\n<value><array><data>\n<value><struct>\n<member>\n<name>aps</name>\n<value><struct>\n<member>\n<name>alert</name>\n<value><struct>\n<member>\n<name>title</name>\n<value><string>T</string></value>\n</member>\n<member>\n<name>body</name>\n<value><string>B \"q\" \\ é</string></value>\n</member>\n</struct></value>\n</member>\n<member>\n<name>badge</name>\n<value><int>3</int></value>\n</member>\n<member>\n<name>sound</name>\n<value><string>default</string></value>\n</member>\n<member>\n<name>content-available</name>\n<value><boolean>1</boolean></value>\n</member>\n</struct></value>\n</member>\n<member>\n<name>x</name>\n<value><double>1.25</double></value>\n</member>\n<member>\n<name>n</name>\n<value><nil/></value></member>\n</struct></value>\n<value><struct>\n<member>\n<name>aps</name>\n<value><struct>\n</struct></value>\n</member>\n</struct></value>\n</data></array></value>\n</param>\n</params>\n</methodCall>\n"
        case .feedback:
            "<?xml version='1.0'?>\n<methodCall>\n<methodName>feedback</methodName>\n<params>\n<param>\n<value><string>myapp</string></value>\n</param>\n</params>\n</methodCall>\n"
        }
    }
}
