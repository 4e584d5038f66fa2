import BluetoothTransport
import BluetoothWire

/// Options of the kernel ATT bearer (those of its L2CAP socket).
public typealias KernelATTBearerOptions = KernelL2CAPSocketOptions

/// The kernel's L2CAP ATT channel as a bearer: `socket(AF_BLUETOOTH, SOCK_SEQPACKET,
/// BTPROTO_L2CAP)` on the fixed ATT channel (CID 4, Core Vol 3 Part A §2.1), where each
/// packet is one ATT PDU. The kernel's host owns the link (the adapter stays up); we own
/// the ATT client.
///
/// Opening: HCIGETDEVINFO reads the adapter's state and its own address; a down adapter
/// is brought up with HCIDEVUP (EALREADY: someone else just did); the socket is bound to
/// the adapter's own address (binding BDADDR_ANY picks the wrong adapter or trips a
/// kernel 6.1 bug when several adapters exist) and connected without blocking, with a
/// timeout. ATT_MTU: the socket's imtu (L2CAP_OPTIONS, else BT_RCVMTU), at most 517.
///
/// The socket is ``KernelL2CAPSocket`` (BluetoothTransport) on CID 4; received PDUs are
/// delivered on its reader thread, in order.
public final class KernelATTBearer: ATTSecurityRaising, @unchecked Sendable {
    /// BT_SECURITY levels.
    public typealias SecurityLevel = KernelL2CAPSocket.SecurityLevel

    /// The kernel socket on the fixed ATT channel.
    public let socket: KernelL2CAPSocket
    /// What the kernel's socket carries at most (its receive MTU).
    public let maximumMTU: UInt16
    /// The adapter (hciN) the socket is on.
    public var adapterIndex: UInt16 { socket.adapterIndex }
    /// The adapter's address.
    public var adapterAddress: BluetoothAddress { socket.adapterAddress }
    /// The peer connected to.
    public var peer: LEAddress { socket.peer }
    /// The socket's imtu as the kernel reported it (before the 517 cap), nil if unknown.
    public var socketMTU: UInt16? { socket.socketMTU }
    public var description: String { socket.description }

    /// The largest ATT_MTU the protocol uses on LE (Core Vol 3 Part F §3.2.9: 512-byte values + 5).
    public static let attMaximumMTU: UInt16 = 517
    /// ATT_MTU without Exchange MTU on LE (Core Vol 3 Part F §3.2.8).
    public static let attDefaultMTU: UInt16 = 23

    /// Connects to `peer` over adapter `hci<adapter>`. Throws a `TransportError` that
    /// says what to do: no Bluetooth in the kernel, no such adapter, adapter down and not
    /// allowed to bring it up, permission, peer refused or absent (timeout).
    public init(adapter index: UInt16, peer: LEAddress, options: KernelATTBearerOptions = KernelATTBearerOptions()) throws(TransportError) {
        socket = try KernelL2CAPSocket(adapter: index, peer: peer, cid: LinuxBluetooth.attCID, options: options)
        maximumMTU = max(Self.attDefaultMTU, min(socket.socketMTU ?? Self.attDefaultMTU, Self.attMaximumMTU))
    }

    /// Starts the socket's reader thread: PDUs and closure are delivered on it.
    public func start(received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, closed: @escaping @Sendable (ATTBearerClosed) -> Void) {
        socket.start(received: received, closed: closed)
    }

    /// Writes `pdu` to the socket (may block while the kernel's buffer is full).
    public func send(_ pdu: [UInt8]) throws(ATTBearerClosed) {
        do throws(KernelL2CAPSocket.Closed) {
            try socket.send(pdu)
        } catch {
            throw error
        }
    }

    /// Closes the socket (the kernel drops the link when nothing else uses it).
    public func close() { socket.close() }

    /// The socket's current BT_SECURITY level.
    public func securityLevel() throws(TransportError) -> SecurityLevel { try socket.securityLevel() }

    /// Asks the kernel for `level` and waits until the link has it (see
    /// ``KernelL2CAPSocket/raiseSecurity(level:)``).
    public func raiseSecurity(level: SecurityLevel) throws(TransportError) { try socket.raiseSecurity(level: level) }

    /// After a request failed with `error`: raises security one step if that can help
    /// and returns the level asked for (the caller retries the request), or nil.
    public func raiseSecurity(after error: ATTErrorCode) throws(TransportError) -> SecurityLevel? {
        guard let level = SecurityLevel.after(error, current: try securityLevel()) else { return nil }
        try raiseSecurity(level: level)
        return level
    }

    /// ``ATTSecurityRaising``: the kernel encrypts (pairing first if needed) on a thread of
    /// its own, so the wait (up to the security timeout) blocks no task.
    public func raiseSecurity(after error: ATTErrorCode, announce: @Sendable (String) -> Void) async throws(ATTSecurityFailure) -> String? {
        guard let current = try? securityLevel(), let level = SecurityLevel.after(error, current: current) else { return nil }
        announce(level.description)
        let socket = self.socket
        let result: Result<Void, TransportError> = await runOnOwnThread {
            do throws(TransportError) {
                try socket.raiseSecurity(level: level)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        if case .failure(let e) = result { throw ATTSecurityFailure(e.message) }
        return ((try? securityLevel()) ?? level).description
    }
}

extension KernelL2CAPSocket.SecurityLevel {
    /// The level to ask for after a request failed with `error` at `current`, or nil
    /// when raising security would not help (Core Vol 3 Part C §10.3: insufficient
    /// encryption → encrypt; insufficient authentication → encrypt first, then an
    /// authenticated key).
    public static func after(_ error: ATTErrorCode, current: Self) -> Self? {
        switch error {
        case .insufficientEncryption, .encryptionKeySizeTooShort:
            return current < .medium ? .medium : nil
        case .insufficientAuthentication:
            if current < .medium { return .medium }
            return current < .high ? .high : nil
        default:
            return nil
        }
    }
}
