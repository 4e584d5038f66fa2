import BluetoothHost
import BluetoothSecurity
import BluetoothWire

/// The ATT fixed channel (CID 4) of an LE link run by our own host over HCI.
/// A bearer takes one side (``ATTRole``) of the link's ATT channel: a GATT client the
/// client side, a ``GATTServer`` the server side; both may run on one link.
public final class HostATTBearer: ATTBearer {
    /// The link.
    public let connection: LEConnection
    /// Which side of ATT this bearer carries (client, server or both).
    public let role: ATTRole

    /// A bearer on `connection`'s ATT channel (CID 4) for `role`.
    public init(connection: LEConnection, role: ATTRole = .client) {
        self.connection = connection
        self.role = role
    }

    /// The link's security now.
    public var security: LinkSecurity { connection.security }
    /// The peer's identity (its bonded identity address, else its address).
    public var peerIdentity: LEAddress? { connection.peerIdentity }
    /// Calls `body` after each change of the link's security.
    public func observeSecurity(_ body: @escaping @Sendable (LinkSecurity) -> Void) { connection.observeSecurity(body) }
    /// `sendATT` posts to the host's driver thread; it never waits.
    public var sendsWithoutBlocking: Bool { true }
    /// The ATT_MTU settled on this link (by either side's exchange), if any.
    public var negotiatedMTU: Int? {
        let m = connection.attMTU
        return m > ATT.defaultMTU ? m : nil
    }
    /// Shares an ATT_MTU one side settled with the other side of the link.
    public func mtuNegotiated(_ mtu: Int) { connection.noteATTMTU(mtu) }

    /// 517 (what the host offers).
    public var maximumMTU: UInt16 { connection.maximumATTMTU }
    /// Whether the link's send queue takes `bytes` more now.
    public func hasRoom(for bytes: Int) -> Bool { connection.hasRoom(forATT: bytes) }
    /// Waits until the link's send queue takes `bytes` more (or the link is gone).
    public func waitForRoom(for bytes: Int) async { await connection.waitForRoom(forATT: bytes) }

    /// Starts delivering ATT PDUs for this role (buffered ones first) and link closure.
    public func start(received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void, closed: @escaping @Sendable (ATTBearerClosed) -> Void) {
        connection.startATT(role: role, received: received) { reason, message in
            closed(ATTBearerClosed(reason: reason, message: message))
        }
    }

    /// Queues `pdu` on the link (never blocks).
    public func send(_ pdu: [UInt8]) throws(ATTBearerClosed) {
        do {
            try connection.sendATT(pdu)
        } catch {
            var reason: HCIErrorCode?
            if case .disconnected(let r) = error.kind { reason = r }
            throw ATTBearerClosed(reason: reason, message: error.message)
        }
    }

    /// Ends the bearer by disconnecting the link (its L2CAP channels and any other bearer on
    /// it end too): a GATT client closing means the link is no longer wanted.
    public func close() {
        let connection = self.connection
        Task { await connection.disconnect() }
    }

    public var description: String { connection.description }
}

extension HostATTBearer: ATTSecurityRaising {
    /// When the server asks for encryption or authentication the link lacks: encrypts with
    /// the stored bond when there is one (falling back to pairing when the device lost it),
    /// else pairs with the host's settings.
    public func raiseSecurity(after error: ATTErrorCode, announce: @Sendable (String) -> Void) async throws(ATTSecurityFailure) -> String? {
        let s = connection.security
        switch error {
        case .insufficientEncryption, .encryptionKeySizeTooShort:
            guard !s.encrypted else { return nil }
        case .insufficientAuthentication:
            guard !s.authenticated else { return nil }
        default:
            return nil
        }
        // A bond that cannot be read is not "no bond": pairing over it unasked would replace it.
        let stored: Bond?
        do throws(HostError) { stored = try connection.storedBond() } catch { throw ATTSecurityFailure(error.message) }
        if !s.encrypted, let bond = stored, bond.centralKey != nil,
           error != .insufficientAuthentication || bond.authenticated {
            announce("encrypted (with the stored bond)")
            do throws(HostError) {
                if try await connection.encryptWithBond() { return connection.security.description }
            } catch {
                if !connection.isConnected { throw ATTSecurityFailure(error.message) }
                // A bonded device refusing its key may be an impostor at its address (BLESA):
                // pairing again here, unasked, would hand it a new bond. It is the user's call.
                throw ATTSecurityFailure("\(connection.address) refused the stored bond's key (\(error.message)); "
                                         + "it may have removed its pairing information: remove the bond or pair again explicitly")
            }
        }
        announce(s.encrypted ? "authenticated" : "encrypted")
        // Authentication needs a MITM-protected method: ask for one (the IO capabilities may
        // not allow it). Over a bond, what re-pairing over it needs (pairUnasked).
        do throws(HostError) {
            _ = try await connection.pairUnasked(mitm: error == .insufficientAuthentication)
        } catch {
            throw ATTSecurityFailure(error.message)
        }
        if error == .insufficientAuthentication && !connection.security.authenticated { return nil }
        return connection.security.description
    }
}
