import BluetoothHost
import BluetoothWire
@testable import HCIGATTFormat
import Testing

/// Captures built in memory and replayed in packet mode: for the tests that hold a direct
/// writing path byte for byte to the general one.
enum CaptureFixtures {
    /// A btsnoop file of `packets` (H4 indicator first), `flags(i)` for record i, records
    /// `step` microseconds apart.
    static func capture(_ packets: [[UInt8]], step: Int64, flags: (Int) -> BTSnoopRecordFlags) -> [UInt8] {
        var file = [UInt8](repeating: 0, count: 64 + packets.reduce(0) { $0 + $1.count + 24 })
        let n = file.withUnsafeMutableBytes { buf -> Int in
            var w = ByteWriter(buf)
            do {
                try BTSnoop.encodeFileHeader(into: &w)
                for (i, packet) in packets.enumerated() {
                    try packet.withUnsafeBytes { p in
                        try BTSnoop.encodeRecord(p, flags: flags(i),
                                                 timestamp: BTSnoop.timestamp(unixMicroseconds: 1_700_000_000_000_000 + Int64(i) * step),
                                                 into: &w)
                    }
                }
            } catch {
                Issue.record("capture: \(error)")
            }
            return w.count
        }
        return Array(file[0 ..< n])
    }

    /// `file` replayed with `--packets` (`json` or text); `configure` sets the paths.
    static func replay(_ file: [UInt8], json: Bool, configure: (inout CaptureReplay) -> Void) -> CaptureReplay {
        var r = CaptureReplay(configuration: ScanConfiguration(), json: json, packets: true)
        configure(&r)
        file.withUnsafeBytes { buf in
            guard var reader = try? BTSnoopReader(buf) else { Issue.record("not a capture"); return }
            while let record = try? reader.next() { r.record(record) }
        }
        r.finish()
        return r
    }
}
