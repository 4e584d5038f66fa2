import BluetoothHost
import BluetoothWire
import Synchronization

/// Two fake controllers on one simulated link, for two of our hosts to meet: a central's
/// LE Create Connection reaches the peripheral while it advertises connectably, ACL data
/// crosses, Disconnect ends the link on both sides, and LE Enable Encryption asks the
/// peripheral's host for the key (LE Long Term Key Request) and compares it, as a pair
/// of real controllers would.
public final class FakeAir: @unchecked Sendable {
    public static let handle: UInt16 = 0x40
    private struct State {
        var central: FakeControllerTransport?
        var peripheral: FakeControllerTransport?
        var advertising = false
        var connected = false
        /// The key the central asked to encrypt with, while the peripheral's host finds its own.
        var pendingKey: [UInt8]?
        /// Connections refused while true (the device is out of range).
        var outOfRange = false
    }
    private let state = Mutex(State())
    public let centralAddress: BluetoothAddress
    public let peripheralAddress: BluetoothAddress

    /// The central's and the peripheral's transports (give each to an HCIHost).
    public var central: FakeControllerTransport { state.withLock { $0.central! } }
    public var peripheral: FakeControllerTransport { state.withLock { $0.peripheral! } }

    /// The peripheral as the central sees it.
    public var peripheralLEAddress: LEAddress { LEAddress(peripheralAddress, type: .public) }
    public var centralLEAddress: LEAddress { LEAddress(centralAddress, type: .public) }

    public init(central c: FakeControllerModel = FakeControllerModel(), peripheral p: FakeControllerModel = {
        var m = FakeControllerModel()
        m.address = BluetoothAddress(0xC0, 0xDE, 0x00, 0x00, 0x00, 0x01)
        return m
    }()) {
        centralAddress = c.address
        peripheralAddress = p.address
        var cm = c, pm = p
        cm.statusOpcodes.insert(.leEnableEncryption)
        pm.statusOpcodes.insert(.leEnableEncryption)
        // Weak: a test that ends early drops the air while its hosts still close their links
        // (the commands then go nowhere instead of crashing the test process).
        let central = FakeControllerTransport(model: cm, onCommand: { [weak self] op, fake in self?.centralCommand(op, fake) },
                                              onACL: { [weak self] bytes, _ in self.map { $0.cross(bytes, to: $0.peripheral) } })
        let peripheral = FakeControllerTransport(model: pm, onCommand: { [weak self] op, fake in self?.peripheralCommand(op, fake) },
                                                 onACL: { [weak self] bytes, _ in self.map { $0.cross(bytes, to: $0.central) } })
        state.withLock {
            $0.central = central
            $0.peripheral = peripheral
        }
    }

    /// Whether the link is up.
    public var isConnected: Bool { state.withLock { $0.connected } }

    /// The peripheral goes out of range: the link is lost (Connection Timeout on both
    /// sides) and no connection reaches it until it is back.
    public func goOutOfRange() {
        let was = state.withLock { s -> Bool in
            s.outOfRange = true
            defer { s.connected = false }
            return s.connected
        }
        if was { disconnected(central: .connectionTimeout, peripheral: .connectionTimeout) }
    }

    /// Back in range: connections reach it again.
    public func comeBack() { state.withLock { $0.outOfRange = false } }

    private func cross(_ bytes: [UInt8], to other: FakeControllerTransport) {
        guard bytes.count >= 5, state.withLock({ $0.connected }) else { return }
        let hf = UInt16(bytes[1]) | UInt16(bytes[2]) << 8
        let pb = UInt8(hf >> 12) & 3
        // Host to controller: first non-flushable (0b00); controller to host: first flushable.
        other.injectACL(handle: Self.handle, pb: pb == 0b00 ? 0b10 : pb, Array(bytes[5...]))
    }

    private func centralCommand(_ op: HCIOpcode, _ fake: FakeControllerTransport) {
        switch op {
        case .leCreateConnection, .leExtendedCreateConnection:
            let connect = state.withLock { s -> Bool in
                guard s.advertising, !s.outOfRange, !s.connected else { return false }
                s.connected = true
                s.advertising = false  // legacy advertising stops when a central connects
                return true
            }
            guard connect else { return }
            peripheral.injectEvent(connectionCompleteEvent(handle: Self.handle, peer: centralLEAddress, role: .peripheral))
            fake.injectEvent(connectionCompleteEvent(handle: Self.handle, peer: peripheralLEAddress))
        case .leCreateConnectionCancel:
            fake.injectEvent(connectionCompleteEvent(status: .unknownConnectionIdentifier, handle: 0, peer: peripheralLEAddress))
        case .disconnect:
            if state.withLock({ s in defer { s.connected = false }; return s.connected }) {
                disconnected(central: .connectionTerminatedByLocalHost, peripheral: .remoteUserTerminatedConnection)
            }
        case .leConnectionUpdate:
            // The update happens at once: LE Connection Update Complete on both sides.
            guard let p = fake.commandPackets.last, p.count >= 14, state.withLock({ $0.connected }) else { return }
            let event: [UInt8] = [0x3E, 10, 0x03, 0x00, UInt8(Self.handle & 0xFF), UInt8(Self.handle >> 8)] + Array(p[8 ..< 14])
            fake.injectEvent(event)
            peripheral.injectEvent(event)
        case .leEnableEncryption:
            guard let p = fake.commandPackets.last, p.count >= 32, state.withLock({ $0.connected }) else { return }
            state.withLock { $0.pendingKey = Array(p[16 ..< 32]) }
            // LE Long Term Key Request: handle, Rand (8), EDIV (2), as the central sent them.
            peripheral.injectEvent([0x3E, 13, 0x05, UInt8(Self.handle & 0xFF), UInt8(Self.handle >> 8)] + Array(p[6 ..< 16]))
        default: break
        }
    }

    private func peripheralCommand(_ op: HCIOpcode, _ fake: FakeControllerTransport) {
        guard let p = fake.commandPackets.last else { return }
        switch op {
        case .leSetAdvertisingEnable, .leSetExtendedAdvertisingEnable:
            let on = p.count > 4 && p[4] != 0
            state.withLock { $0.advertising = on }
        case .disconnect:
            if state.withLock({ s in defer { s.connected = false }; return s.connected }) {
                disconnected(central: .remoteUserTerminatedConnection, peripheral: .connectionTerminatedByLocalHost)
            }
        case .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply:
            guard let wanted = state.withLock({ s in defer { s.pendingKey = nil }; return s.pendingKey }) else { return }
            let ok = op == .leLongTermKeyRequestReply && p.count >= 22 && Array(p[6 ..< 22]) == wanted
            let event: [UInt8] = [0x08, 4, ok ? 0x00 : HCIErrorCode.pINOrKeyMissing.rawValue,
                                  UInt8(Self.handle & 0xFF), UInt8(Self.handle >> 8), ok ? 1 : 0]
            fake.injectEvent(event)
            central.injectEvent(event)
        default: break
        }
    }

    private func disconnected(central c: HCIErrorCode, peripheral p: HCIErrorCode) {
        central.injectEvent(disconnectionCompleteEvent(handle: Self.handle, reason: c))
        peripheral.injectEvent(disconnectionCompleteEvent(handle: Self.handle, reason: p))
    }
}
