import BluetoothTransport
import BluetoothHost
import BluetoothWire
import Glibc
import Synchronization

/// An in-process fake controller behind an H4 byte stream over socketpair(AF_UNIX,
/// SOCK_STREAM). The host side is the transport; commands written by the host are answered
/// at once (written to the controller end) from a ``FakeControllerModel``. Tests inject
/// events or close the controller end to simulate a controller going away.
public final class FakeControllerTransport: HCITransport, @unchecked Sendable {
    private let hostFD: Int32
    private let controllerFD: Int32
    private var deframer = H4Deframer()
    private struct State {
        var model: FakeControllerModel
        public var commands: [HCIOpcode] = []
        public var commandPackets: [[UInt8]] = []
        /// ACL packets written by the host (H4 indicator included).
        public var acl: [[UInt8]] = []
        var controllerOpen = true
        var hostClosed = false
    }
    private let state: Mutex<State>
    /// Called (on the driver thread) after the answer to each command, with its opcode.
    public let onCommand: (@Sendable (HCIOpcode, FakeControllerTransport) -> Void)?

    public init(model: FakeControllerModel = .init(), completesPackets: Bool = true, holdsUnreadData: Bool = true,
         keepsACL: Bool = true,
         onCommand: (@Sendable (HCIOpcode, FakeControllerTransport) -> Void)? = nil,
         onACL: (@Sendable ([UInt8], FakeControllerTransport) -> Void)? = nil) {
        self.completesPackets = completesPackets
        self.holdsUnreadData = holdsUnreadData
        self.keepsACL = keepsACL
        self.onACL = onACL
        var fds: [Int32] = [-1, -1]
        let r = fds.withUnsafeMutableBufferPointer { socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, $0.baseAddress) }
        precondition(r == 0, "socketpair failed")
        hostFD = fds[0]
        controllerFD = fds[1]
        _ = fcntl(hostFD, F_SETFL, fcntl(hostFD, F_GETFL) | O_NONBLOCK)
        state = Mutex(State(model: model))
        self.onCommand = onCommand
    }

    deinit {
        close()
        closeController()
        _ = Glibc.close(controllerFD)
    }

    public var fileDescriptor: Int32 { hostFD }
    public var description: String { "fake:socketpair" }
    public var commands: [HCIOpcode] { state.withLock { $0.commands } }
    public var commandPackets: [[UInt8]] { state.withLock { $0.commandPackets } }
    public var acl: [[UInt8]] { state.withLock { $0.acl } }
    /// Answer every ACL packet with Number Of Completed Packets (a controller that keeps up).
    public let completesPackets: Bool
    /// A socketpair holds what the host does not read (the injecting writer waits), like
    /// TCP; false makes the host treat it like a kernel socket (no back-pressure).
    public let holdsUnreadData: Bool
    /// Keep every ACL packet the host writes in ``acl`` (false: a benchmark's millions).
    public let keepsACL: Bool
    /// Called (on the driver thread) for each ACL packet the host writes.
    public let onACL: (@Sendable ([UInt8], FakeControllerTransport) -> Void)?

    public func readAvailable(_ body: (UnsafeRawBufferPointer) -> Void) throws(TransportError) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(hostFD, $0.baseAddress, $0.count) }
        if n == 0 { return false }
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return true }
            throw TransportError(.io, "read failed", errno: errno)
        }
        buffer.withUnsafeBytes { deframer.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        while true {
            let frame: H4Frame?
            do throws(WireError) { frame = try deframer.next() } catch {
                throw TransportError(.malformedStream, "bad H4 stream: \(error)")
            }
            guard let frame else { break }
            let packet = [frame.type.rawValue] + Array(frame.packet)
            packet.withUnsafeBytes { body($0) }
        }
        return true
    }

    public func write(_ packet: UnsafeRawBufferPointer) throws(TransportError) {
        let bytes = Array(packet)
        if bytes.first == 0x02, bytes.count >= 5 {
            if keepsACL { state.withLock { $0.acl.append(bytes) } }
            if completesPackets {
                injectEvent(nocpEvent([(UInt16(bytes[1]) | UInt16(bytes[2] & 0x0F) << 8, 1)]))
            }
            onACL?(bytes, self)
            return
        }
        guard let opcode = opcodeOf(bytes) else { return }
        let (answer, asStatus): ([UInt8]?, Bool) = state.withLock { s in
            s.commands.append(opcode)
            s.commandPackets.append(bytes)
            return (s.model.returnParameters(for: opcode), s.model.statusOpcodes.contains(opcode))
        }
        if let answer {
            if asStatus {
                inject([0x04] + commandStatus(opcode, status: HCIErrorCode(rawValue: answer.first ?? 0)))
            } else {
                inject([0x04] + commandComplete(opcode, answer))
            }
        }
        onCommand?(opcode, self)
    }

    /// Serialises the controller side's writes; not the state lock, which a write blocked
    /// on a full socket must not hold (the host's own commands need it to be answered).
    private let writing = Mutex(())

    /// Writes raw bytes from the controller side (the host reads them). Waits while the
    /// socket is full, as a controller behind TCP would.
    public func inject(_ bytes: [UInt8]) {
        guard state.withLock({ $0.controllerOpen }) else { return }
        writing.withLock { _ in
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { send(controllerFD, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { if errno == EINTR { continue }; return }
                offset += n
            }
        }
    }

    public func injectEvent(_ event: [UInt8]) { inject([0x04] + event) }

    /// Injects an ACL packet from the controller (PB 0b10 first flushable by default).
    public func injectACL(handle: UInt16, pb: UInt8 = 0b10, _ data: [UInt8]) {
        let hf = handle | UInt16(pb) << 12
        inject([0x02, UInt8(hf & 0xFF), UInt8(hf >> 8), UInt8(data.count & 0xFF), UInt8(data.count >> 8)] + data)
    }

    /// The controller goes away: the host sees end of stream (a write blocked on the full
    /// socket fails; the descriptor is closed when the fake goes).
    public func closeController() {
        state.withLock { s in
            guard s.controllerOpen else { return }
            s.controllerOpen = false
            _ = shutdown(controllerFD, Int32(SHUT_RDWR))
        }
    }

    public func close() {
        state.withLock { s in
            guard !s.hostClosed else { return }
            s.hostClosed = true
            _ = Glibc.close(hostFD)
        }
    }

    public var isClosed: Bool { state.withLock { $0.hostClosed } }
}
