import BluetoothHost
import BluetoothTransport
import BluetoothWire

/// A channel that carries ATT PDUs to one peer: the fixed ATT channel (CID 4) of an LE
/// link run by our own host over HCI, or the kernel's L2CAP ATT socket.
///
/// The GATT client owns the protocol (one outstanding request, timeouts, MTU); a bearer
/// only moves PDUs. Received PDUs are delivered in order on the bearer's own thread.
public protocol ATTBearer: AnyObject, Sendable {
    /// The largest ATT_MTU this side can take (517 for our host; the L2CAP socket's imtu
    /// for the kernel bearer). The client offers it in Exchange MTU.
    var maximumMTU: UInt16 { get }

    /// Starts delivery: `received` gets every ATT PDU from the peer (opcode first), in
    /// order, as a view valid only during the call (no copy on the receive path); `closed` is called once when the bearer goes away (link lost, peer
    /// disconnected, socket error), with the reason. Call once.
    func start(received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, closed: @escaping @Sendable (ATTBearerClosed) -> Void)

    /// Queues one ATT PDU for the peer. Fails when the bearer is closed.
    ///
    /// Must not call `received` or `closed` from inside the call. The GATT client and
    /// server call it outside their locks.
    func send(_ pdu: [UInt8]) throws(ATTBearerClosed)

    /// Closes the bearer (disconnects the link for our host; closes the socket).
    func close()

    /// For messages, e.g. "F0:F1:F2:F3:F4:01 (public) via tcp:127.0.0.1:9001".
    var description: String { get }

    /// The link's security, for a server's permission checks.
    var security: LinkSecurity { get }

    /// True when `send` only queues (never waits on a socket): the GATT server then sends
    /// under its lock, so its PDUs leave exactly in the order its state machine made them
    /// (an Exchange MTU response before anything sized by the new MTU).
    var sendsWithoutBlocking: Bool { get }

    /// An ATT_MTU already settled on this bearer by the other side (client or server) of
    /// the same link, or nil.
    var negotiatedMTU: Int? { get }

    /// Tells the bearer an Exchange MTU settled `mtu`, so the other side uses it too.
    func mtuNegotiated(_ mtu: Int)

    /// Whether a PDU of `bytes` can be queued now without exceeding the bearer's bounded
    /// send queue (a full queue makes `send` fail).
    func hasRoom(for bytes: Int) -> Bool

    /// Waits until ``hasRoom(for:)`` holds, or the bearer closed: back-pressure for a
    /// sender of notifications.
    func waitForRoom(for bytes: Int) async

    /// The peer's identity address when known (bonds are kept by it).
    var peerIdentity: LEAddress? { get }

    /// Calls `body` after each change of the link's security (a bearer that cannot tell
    /// never calls it).
    func observeSecurity(_ body: @escaping @Sendable (LinkSecurity) -> Void)
}

extension ATTBearer {
    /// Unencrypted, unless the bearer knows better.
    public var security: LinkSecurity { .unencrypted }
    /// Not known, unless the bearer knows better.
    public var peerIdentity: LEAddress? { nil }
    /// Never called, unless the bearer can tell.
    public func observeSecurity(_ body: @escaping @Sendable (LinkSecurity) -> Void) {}
    /// A bearer's `send` may block unless it says otherwise.
    public var sendsWithoutBlocking: Bool { false }
    /// Nothing shared, unless the bearer keeps the MTU of its link.
    public var negotiatedMTU: Int? { nil }
    /// Ignored, unless the bearer keeps the MTU of its link.
    public func mtuNegotiated(_ mtu: Int) {}
    /// A bearer whose `send` waits for room itself (a socket) always has room.
    public func hasRoom(for bytes: Int) -> Bool { true }
    /// Returns at once (see ``hasRoom(for:)``).
    public func waitForRoom(for bytes: Int) async {}
}

/// Why a bearer closed: the stack's one closed type (``ChannelClosed``), shared with the
/// kernel's L2CAP socket.
public typealias ATTBearerClosed = ChannelClosed

/// A bearer whose link security can be raised when a server refuses a request for it
/// (Core Vol 3 Part C §10.3: Insufficient Encryption → encrypt; Insufficient
/// Authentication → an authenticated key). ``GATTClient`` then raises it once and sends
/// the request again, as BlueZ does. The kernel's socket does it through the kernel's SMP.
public protocol ATTSecurityRaising: ATTBearer {
    /// Raises security one step after `error` if that can help, waiting until it is done
    /// (encryption with a stored key, or pairing first); `announce` gets the level asked for
    /// before the wait. Returns the level reached, or nil when raising would not help.
    func raiseSecurity(after error: ATTErrorCode, announce: @Sendable (String) -> Void) async throws(ATTSecurityFailure) -> String?
}

/// Raising a link's security failed (pairing refused or timed out, no SMP, the link dropped).
public struct ATTSecurityFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for people.
    public var message: String
    /// A failure saying `message`.
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// What ``GATTClient`` did about a request refused for security (see ``ATTSecurityRaising``).
public enum GATTSecurityEvent: Sendable, Equatable {
    /// A request failed with `error`; security is being raised to `level`.
    case raising(error: ATTErrorCode, level: String)
    /// The link is at `level` now; the request is sent again.
    case raised(level: String)
    /// Raising failed; the request's own error stands.
    case failed(ATTSecurityFailure)
}
