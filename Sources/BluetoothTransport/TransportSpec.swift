/// Where the controller is, as given with `--transport`.
///
/// Accepted forms (see ``TransportSpec/acceptedForms``):
/// - `user:hciN` or `hciN` — HCI user channel (exclusive, adapter down);
/// - `raw:hciN` — HCI raw channel beside the kernel's host (adapter up);
/// - `tcp:HOST:PORT` — H4 over TCP; HOST is an IPv4/IPv6 address (`[::1]` or `::1`) or a name;
/// - `serial:/dev/ttyX[,BAUD[,rtscts]]` — H4 over a UART, default 115200 baud, no flow control.
public enum TransportSpec: Hashable, Sendable, CustomStringConvertible {
    case userChannel(index: UInt16)
    case rawChannel(index: UInt16)
    case tcp(host: String, port: UInt16)
    case serial(path: String, baudRate: Int, flowControl: Bool)

    /// `serial:` without a baud rate.
    public static let defaultBaudRate = 115_200

    /// Baud rates `serial:` accepts (the termios standard rates).
    public static let standardBaudRates: [Int] = [
        1200, 2400, 4800, 9600, 19200, 38400, 57600, 115_200, 230_400, 460_800, 500_000, 576_000,
        921_600, 1_000_000, 1_152_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000,
    ]

    /// For error messages.
    public static let acceptedForms = "user:hciN (or hciN), raw:hciN, tcp:HOST:PORT, serial:/dev/ttyX[,BAUD[,rtscts]]"

    /// Parses a `--transport` spec (see ``acceptedForms``); the error says what is wrong.
    public init(parsing text: String) throws(TransportError) {
        func invalid(_ why: String) -> TransportError {
            TransportError(.invalidSpec, "invalid transport \"\(text)\": \(why); accepted forms: \(TransportSpec.acceptedForms)")
        }
        let (scheme, rest): (Substring, Substring)
        if let colon = text.firstIndex(of: ":") {
            scheme = text[..<colon]
            rest = text[text.index(after: colon)...]
        } else {
            scheme = ""
            rest = text[...]
        }
        switch scheme {
        case "":
            guard let index = TransportSpec.adapterIndex(rest) else { throw invalid("expected hciN (e.g. hci0)") }
            self = .userChannel(index: index)
        case "user", "raw":
            guard let index = TransportSpec.adapterIndex(rest) else {
                throw invalid("expected an adapter name like hci0 after \"\(scheme):\"")
            }
            self = scheme == "user" ? .userChannel(index: index) : .rawChannel(index: index)
        case "tcp":
            guard let colon = rest.lastIndex(of: ":") else { throw invalid("expected tcp:HOST:PORT") }
            var host = rest[..<colon]
            let portText = rest[rest.index(after: colon)...]
            if host.hasPrefix("[") && host.hasSuffix("]") && host.count >= 2 {
                host = host.dropFirst().dropLast()
            }
            guard !host.isEmpty else { throw invalid("the host is empty") }
            guard !host.contains(where: { $0 == " " || $0 == "[" || $0 == "]" || $0 == "/" }) else {
                throw invalid("\"\(host)\" is not a host name or address")
            }
            guard portText.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(portText), port > 0 else {
                throw invalid("the port must be a number from 1 to 65535")
            }
            self = .tcp(host: String(host), port: port)
        case "serial":
            let parts = rest.split(separator: ",", omittingEmptySubsequences: false)
            guard let path = parts.first, !path.isEmpty else { throw invalid("expected a device path, e.g. serial:/dev/ttyUSB0") }
            guard parts.count <= 3 else { throw invalid("too many options after the device path") }
            var baud = TransportSpec.defaultBaudRate
            if parts.count >= 2 {
                guard parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let b = Int(parts[1]), TransportSpec.standardBaudRates.contains(b) else {
                    throw invalid("\"\(parts[1])\" is not a standard baud rate (\(TransportSpec.standardBaudRates.map(String.init).joined(separator: ", ")))")
                }
                baud = b
            }
            var flow = false
            if parts.count == 3 {
                guard parts[2] == "rtscts" else { throw invalid("the only flow control option is \"rtscts\"") }
                flow = true
            }
            self = .serial(path: String(path), baudRate: baud, flowControl: flow)
        default:
            throw invalid("unknown kind \"\(scheme)\"")
        }
    }

    /// "hci0" → 0. Accepts 0...65534 (65535 is HCI_DEV_NONE).
    static func adapterIndex(_ s: Substring) -> UInt16? {
        guard s.hasPrefix("hci") else { return nil }
        let digits = s.dropFirst(3)
        guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
              let n = UInt16(digits), n != 0xFFFF else { return nil }
        return n
    }

    /// The canonical form, which parses back to the same spec.
    public var description: String {
        switch self {
        case .userChannel(let i): "user:hci\(i)"
        case .rawChannel(let i): "raw:hci\(i)"
        case .tcp(let host, let port): host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case .serial(let path, let baud, let flow): "serial:\(path),\(baud)" + (flow ? ",rtscts" : "")
        }
    }
}

/// How transports are opened.
public struct TransportOptions: Sendable {
    /// User channel: if the adapter is up (held by the kernel's host / bluetoothd),
    /// bring it down with HCIDEVDOWN and take it. Off by default: it disconnects
    /// everything the system's Bluetooth stack has open on that adapter.
    public var bringDown: Bool
    /// User channel: how long to keep retrying while the kernel answers EBUSY
    /// (it does for a few seconds after an adapter appears), and how often.
    public var busyRetryDuration: Duration
    /// How often the user channel retries while EBUSY.
    public var busyRetryInterval: Duration
    /// TCP: how long to wait for the connection.
    public var connectTimeout: Duration
    /// How long a write may wait for a full descriptor to become writable.
    public var writeTimeout: Duration
    /// The system calls to use (tests replace them).
    public var system: SystemCalls

    /// The defaults: no bring-down, EBUSY retried for 3 s every 100 ms, 5 s to connect and per write.
    public init(
        bringDown: Bool = false,
        busyRetryDuration: Duration = .seconds(3),
        busyRetryInterval: Duration = .milliseconds(100),
        connectTimeout: Duration = .seconds(5),
        writeTimeout: Duration = .seconds(5),
        system: SystemCalls = .live
    ) {
        self.bringDown = bringDown
        self.busyRetryDuration = busyRetryDuration
        self.busyRetryInterval = busyRetryInterval
        self.connectTimeout = connectTimeout
        self.writeTimeout = writeTimeout
        self.system = system
    }
}

extension Duration {
    /// Whole nanoseconds, saturating; negative durations count as 0.
    public var nanoseconds: UInt64 {
        let (s, a) = components
        guard s >= 0 else { return 0 }
        let (ns, overflow) = UInt64(s).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return UInt64.max }
        let (sum, over) = ns.addingReportingOverflow(UInt64(max(a, 0) / 1_000_000_000))
        return over ? UInt64.max : sum
    }

    /// Whole milliseconds rounded up, for poll(2) timeouts (saturating).
    public var milliseconds: Int32 { Int32(clamping: nanoseconds / 1_000_000 + (nanoseconds % 1_000_000 == 0 ? 0 : 1)) }
}

/// Opens the transport `spec` describes.
public func openTransport(_ spec: TransportSpec, options: TransportOptions = TransportOptions()) throws(TransportError) -> any HCITransport {
    switch spec {
    case .userChannel(let index):
        try UserChannelTransport(index: index, options: options)
    case .rawChannel(let index):
        try RawChannelTransport(index: index, options: options)
    case .tcp(let host, let port):
        try TCPTransport(host: host, port: port, options: options)
    case .serial(let path, let baud, let flow):
        try SerialTransport(path: path, baudRate: baud, flowControl: flow, options: options)
    }
}
