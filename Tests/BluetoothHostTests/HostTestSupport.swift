import FakeController
@testable import BluetoothHost
import BluetoothWire

/// Parses `bytes` as an event and runs `body` on it while the buffer is alive.
func withEvent<R>(_ bytes: [UInt8], _ body: (HCIEvent) -> R) -> R {
    bytes.withUnsafeBytes { buffer in
        do { return body(try HCIEvent(parsing: buffer)) } catch { preconditionFailure("bad test event: \(error)") }
    }
}

func h4(_ command: some HCICommandEncodable) -> [UInt8] {
    do { return try command.encodedH4() } catch { preconditionFailure("cannot encode test command: \(error)") }
}

extension [FlowAction] {
    var sentOpcodes: [HCIOpcode] {
        compactMap { if case .send(let p) = $0 { opcodeOf(p) } else { nil } }
    }
    var completions: [(CommandToken, Result<CommandReturn, HostError>)] {
        compactMap { if case .complete(let t, let r) = $0 { (t, r) } else { nil } }
    }
}

let second: UInt64 = 1_000_000_000

func addr(_ last: UInt8, _ type: LEAddressType = .public) -> LEAddress {
    LEAddress(BluetoothAddress(0xC0, 0x11, 0x22, 0x33, 0x44, last), type: type)
}

/// AD bytes: flags + complete name (+ 16-bit service UUIDs).
func ad(name: String? = nil, services16: [UInt16] = [], flags: UInt8? = 0x06, manufacturer: (UInt16, [UInt8])? = nil) -> [UInt8] {
    var out: [UInt8] = []
    if let flags { out += [2, 0x01, flags] }
    if !services16.isEmpty {
        out += [UInt8(1 + 2 * services16.count), 0x03]
        for s in services16 { out += [UInt8(s & 0xFF), UInt8(s >> 8)] }
    }
    if let name { let u = Array(name.utf8); out += [UInt8(1 + u.count), 0x09] + u }
    if let (company, data) = manufacturer { out += [UInt8(3 + data.count), 0xFF, UInt8(company & 0xFF), UInt8(company >> 8)] + data }
    return out
}

func legacyReportEvent(_ reports: [LEAdvertisingReportEvent.Owned.Report]) -> [UInt8] {
    eventBytes(LEAdvertisingReportEvent.Owned(reports))
}

func extendedReportEvent(_ reports: [LEExtendedAdvertisingReportEvent.Owned.Report]) -> [UInt8] {
    eventBytes(LEExtendedAdvertisingReportEvent.Owned(reports))
}
