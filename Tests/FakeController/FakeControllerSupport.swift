import BluetoothHost
import BluetoothWire

// Helpers for tests that drive a host through the fake controller: event and packet bytes.

/// An HCI event packet (no H4 indicator) for an encodable event.
public func eventBytes(_ e: some HCIEventParameters) -> [UInt8] {
    do { return try e.encoded() } catch { preconditionFailure("cannot encode test event: \(error)") }
}

/// Command Complete for `opcode` with its return parameters.
public func commandComplete(_ opcode: HCIOpcode, credits: UInt8 = 1, _ params: [UInt8] = [0]) -> [UInt8] {
    eventBytes(HCICommandComplete.Owned(numHCICommandPackets: credits, commandOpcode: opcode, returnParameters: params))
}

/// Command Status for `opcode`.
public func commandStatus(_ opcode: HCIOpcode, credits: UInt8 = 1, status: HCIErrorCode = .success) -> [UInt8] {
    eventBytes(HCICommandStatus(status: status, numHCICommandPackets: credits, commandOpcode: opcode))
}

/// The opcode of an H4 command packet.
public func opcodeOf(_ packet: [UInt8]) -> HCIOpcode? {
    guard packet.count >= 4, packet[0] == 0x01 else { return nil }
    return HCIOpcode(rawValue: UInt16(packet[1]) | UInt16(packet[2]) << 8)
}

/// An HCI_Number_Of_Completed_Packets event packet (no H4 indicator).
public func nocpEvent(_ entries: [(UInt16, UInt16)]) -> [UInt8] {
    var p: [UInt8] = [UInt8(entries.count)]
    for (h, n) in entries { p += [UInt8(h & 0xFF), UInt8(h >> 8), UInt8(n & 0xFF), UInt8(n >> 8)] }
    return [0x13, UInt8(p.count)] + p
}

/// (handle, PB flag, data) of an H4 ACL packet.
public func aclParts(_ packet: [UInt8]) -> (UInt16, UInt8, [UInt8]) {
    let hf = UInt16(packet[1]) | UInt16(packet[2]) << 8
    return (hf & 0x0FFF, UInt8(hf >> 12) & 3, Array(packet[5...]))
}

/// Polls `condition` every 5 ms for up to 2 s.
public func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0 ..< 400 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// A basic L2CAP frame around `payload`.
public func l2capFrameBytes(cid: UInt16, _ payload: [UInt8]) -> [UInt8] {
    le16(UInt16(payload.count)) + le16(cid) + payload
}

/// Two peers' addresses.
public let peerA = LEAddress(BluetoothAddress(0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0x01), type: .public)
public let peerB = LEAddress(BluetoothAddress(0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0x02), type: .random)

/// LE Connection Complete for `handle` with `peer`.
public func connectionCompleteEvent(status: HCIErrorCode = .success, handle: UInt16, peer: LEAddress = peerA,
                                    role: LEConnectionRole = .central, interval: UInt16 = 40) -> [UInt8] {
    eventBytes(LEConnectionComplete(status: status, connectionHandle: handle, role: role, peerAddress: peer,
                                    connectionInterval: interval, peripheralLatency: 0, supervisionTimeout: 400,
                                    centralClockAccuracy: LEClockAccuracy(rawValue: 0)))
}

/// Disconnection Complete for `handle`.
public func disconnectionCompleteEvent(handle: UInt16, reason: HCIErrorCode, status: HCIErrorCode = .success) -> [UInt8] {
    eventBytes(HCIDisconnectionComplete(status: status, connectionHandle: handle, reason: reason))
}

/// Little-endian bytes of `v`.
public func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
