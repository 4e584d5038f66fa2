import BluetoothWire

/// A connection to a controller that carries H4 packets (indicator byte + HCI packet).
///
/// Implementations: HCI user channel and raw channel sockets (one packet per read/write),
/// TCP and UART byte streams (framed with ``H4Deframer``). All are non-blocking file
/// descriptors driven by one poll/epoll loop: the driver waits for `fileDescriptor` to be
/// readable, then calls `readAvailable`.
public protocol HCITransport: AnyObject {
    /// Non-blocking descriptor to wait on for readability.
    var fileDescriptor: Int32 { get }

    /// Reads what is available now without blocking and hands every complete packet
    /// (H4 indicator + HCI packet) to `body`, in order. The buffer is only valid during the
    /// call. Returns false at end of stream (the peer or the kernel closed the transport).
    func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void) throws(TransportError) -> Bool

    /// Like ``readAvailable(_:)``, but asks `stop` between reads of the descriptor and
    /// returns (true) as soon as it says yes; every packet already read is handed out first.
    /// What stays unread waits in the descriptor: see ``holdsUnreadData``.
    func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void, stoppingWhen stop: () -> Bool) throws(TransportError) -> Bool

    /// Whether leaving the descriptor unread holds what the controller sends without loss:
    /// a TCP stream (TCP flow control) or a UART with RTS/CTS. The host may then stop
    /// reading while a consumer is behind, so the back-pressure reaches the controller.
    /// Kernel HCI sockets drop what overflows their receive buffer: false.
    var holdsUnreadData: Bool { get }

    /// Packets lost before the host could read them (a kernel socket's receive buffer
    /// overflowed), counted since the transport opened; nil where nobody counts.
    var receiveDrops: Int? { get }

    /// Writes one packet (H4 indicator + HCI packet) completely, waiting for the
    /// descriptor to become writable if needed.
    func write(_ packet: UnsafeRawBufferPointer) throws(TransportError)

    /// Writes what the descriptor takes now without waiting and returns how many bytes
    /// went (0 when it is full: wait for POLLOUT and call again with the rest). Packet
    /// sockets take a packet whole or not at all; byte streams may take part of it.
    func writeAvailable(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Int

    /// Closes the descriptor. Idempotent.
    func close()

    /// Human description for messages, e.g. "tcp:127.0.0.1:9001" or "user:hci0".
    var description: String { get }
}

extension HCITransport {
    /// Transports that cannot stop part-way read everything (`stop` is not asked).
    public func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void, stoppingWhen stop: () -> Bool) throws(TransportError) -> Bool {
        try readAvailable(body)
    }

    /// Not unless the transport says so.
    public var holdsUnreadData: Bool { false }

    /// Not counted unless the transport says so.
    public var receiveDrops: Int? { nil }

    /// For transports that only have a blocking write (test doubles): writes it all.
    public func writeAvailable(_ bytes: UnsafeRawBufferPointer) throws(TransportError) -> Int {
        try write(bytes)
        return bytes.count
    }
}

/// Why a transport could not be opened or stopped working. `message` is written for the
/// user: it says what is wrong and, where we know, how to fix it.
public struct TransportError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure: what callers switch on.
    public struct Kind: RawRepresentable, Hashable, Sendable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The spec string (`--transport`) is not valid.
        public static let invalidSpec = Kind(rawValue: 1)
        /// The kernel has no AF_BLUETOOTH (no bluetooth module / not built in).
        public static let noBluetoothSupport = Kind(rawValue: 2)
        /// No such adapter (hciN), TCP host or serial device.
        public static let notFound = Kind(rawValue: 3)
        /// The adapter is in use (up, or held by another user channel).
        public static let busy = Kind(rawValue: 4)
        /// Missing privileges (CAP_NET_ADMIN / CAP_NET_RAW, or file permissions).
        public static let permissionDenied = Kind(rawValue: 5)
        /// Could not connect (e.g. TCP connection refused).
        public static let connectionFailed = Kind(rawValue: 6)
        /// The other side closed the transport.
        public static let closed = Kind(rawValue: 7)
        /// The byte stream is not valid H4 (lost framing).
        public static let malformedStream = Kind(rawValue: 8)
        /// Any other system call failure.
        public static let io = Kind(rawValue: 9)
        /// The adapter is down where the transport needs it up (raw channel).
        public static let adapterDown = Kind(rawValue: 10)
        /// A file (btsnoop capture) is not in the expected format.
        public static let malformedFile = Kind(rawValue: 11)
        /// Something the kernel was asked for did not finish in time (e.g. raising security).
        public static let timedOut = Kind(rawValue: 12)
    }

    /// What kind of failure.
    public var kind: Kind
    /// What is wrong and, where known, how to fix it.
    public var message: String
    /// The errno behind the failure, when there is one.
    public var errno: Int32?
    /// For `.malformedStream` / `.malformedFile`: the byte offset where the input went wrong.
    public var streamOffset: Int?

    /// An error of `kind`, with the errno behind it when there is one.
    public init(_ kind: Kind, _ message: String, errno: Int32? = nil) {
        self.kind = kind
        self.message = message
        self.errno = errno
    }

    public var description: String { message }
}
