import BluetoothHost
import BluetoothSecurity
import BluetoothWire
import HCIGATTFormat

/// The scan pipeline as the running process sees it: btsnoop records → H4 → HCI event →
/// scanner (host duplicate filter, device table) → JSON lines.
enum ScanPipeline {
    static let reportCount = 10_000

    /// A btsnoop capture of `reportCount` LE Advertising Report events (one report each)
    /// from `devices` distinct advertisers; every advertiser's name carries its number,
    /// so each distinct device yields one JSON line and repeats yield none.
    static func capture(devices: Int, reports reportCount: Int = reportCount) -> [UInt8] {
        var file = [UInt8](repeating: 0, count: BTSnoop.fileHeaderLength + reportCount * 80)
        let length = file.withUnsafeMutableBytes { buf -> Int in
            var w = ByteWriter(buf)
            do {
                try BTSnoop.encodeFileHeader(into: &w)
                for i in 0 ..< reportCount {
                    let n = i % devices
                    let name = Array("Sensor-\(n)".utf8)
                    let data: [UInt8] = [0x02, 0x01, 0x06, UInt8(name.count + 1), 0x09] + name
                        + [0x05, 0x03, 0x09, 0x18, 0x0F, 0x18, 0x07, 0xFF, 0x4C, 0x00, 0x01, 0x02, 0x03, 0x04]
                    let address = LEAddress(BluetoothAddress(rawValue: 0xC0_0000_0000 | UInt64(n)), type: .random)
                    let report = LEAdvertisingReportEvent.Owned.Report(eventType: .advNonconnInd, address: address,
                                                                       data: data, rssi: -60 - Int8(n % 30))
                    let event = try LEAdvertisingReportEvent.Owned([report]).encoded()
                    let h4 = [H4PacketType.event.rawValue] + event
                    // (Untyped closure: typed-throws closure thunks crash the 6.3 compiler.)
                    try h4.withUnsafeBytes { p in
                        try BTSnoop.encodeRecord(p, flags: BTSnoopRecordFlags(.event, received: true),
                                                 timestamp: BTSnoop.timestamp(unixMicroseconds: 1_700_000_000_000_000 + Int64(i) * 100),
                                                 into: &w)
                    }
                }
            } catch {
                fatalError("benchmark capture: \(error)")
            }
            return w.count
        }
        return Array(file[0 ..< length])
    }

    /// Replays the capture as `hcigatt replay --json` does (scanner, one device table,
    /// lines rendered into one buffer, emptied when it holds 64 KiB), all on this thread
    /// (the CLI formats the lines on a second one: the same work); returns the bytes of
    /// output so none of it is optimized away.
    static func replay(_ file: UnsafeRawBufferPointer, packets: Bool = false, json: Bool = true) -> UInt64 {
        replay(file, ReplayMode(json: json, packets: packets, duplicates: false)).bytes
    }

    /// Replays `file` in `mode`: the bytes of output, lines for devices and packets read.
    static func replay(_ file: UnsafeRawBufferPointer, _ mode: ReplayMode,
                       resolving: [AddressResolver.Entry] = []) -> (bytes: UInt64, lines: Int, packets: Int) {
        var configuration = ScanConfiguration(active: false)
        configuration.reportDuplicates = mode.duplicates
        var replay = CaptureReplay(configuration: configuration, json: mode.json, packets: mode.packets, resolving: resolving)
        var sum: UInt64 = 0
        do throws(WireError) {
            var reader = try BTSnoopReader(file)
            while let record = try reader.next() {
                replay.record(record)
                if replay.writer.out.count >= 1 << 16 {
                    sum &+= UInt64(replay.writer.out.count)
                    replay.writer.out.removeAll()
                }
            }
        } catch {
            return (0, 0, 0)
        }
        replay.finish()
        return (sum &+ UInt64(replay.writer.out.count), replay.lines, replay.packets)
    }
}

/// The modes of `hcigatt replay` that Benchmarks/replay-vs-btmon times.
struct ReplayMode: CaseIterable {
    var json: Bool
    var packets: Bool
    var duplicates: Bool

    static let allCases = [
        ReplayMode(json: true, packets: false, duplicates: false),
        ReplayMode(json: false, packets: false, duplicates: false),
        ReplayMode(json: false, packets: true, duplicates: false),
        ReplayMode(json: true, packets: true, duplicates: false),
        ReplayMode(json: false, packets: false, duplicates: true),
        ReplayMode(json: true, packets: false, duplicates: true),
    ]

    /// As on the command line ("text" for none).
    var name: String {
        let words = (packets ? ["--packets"] : []) + (duplicates ? ["--duplicates"] : []) + (json ? ["--json"] : [])
        return words.isEmpty ? "text" : words.joined(separator: " ")
    }
}
