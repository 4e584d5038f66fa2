import Testing
@testable import BluetoothWire

/// Encodes a file header and records into an array.
func btsnoopFile(_ records: [(data: [UInt8], flags: BTSnoopRecordFlags, drops: UInt32, time: Int64)], datalink: BTSnoopDatalink = .h4) throws -> [UInt8] {
    let length = BTSnoop.fileHeaderLength + records.reduce(0) { $0 + BTSnoop.encodedRecordLength(dataLength: $1.data.count) }
    var out = [UInt8](repeating: 0, count: length)
    try out.withUnsafeMutableBytes { buf in
        var w = ByteWriter(buf)
        try BTSnoop.encodeFileHeader(datalink: datalink, into: &w)
        for r in records {
            try r.data.withUnsafeBytes { d in
                try BTSnoop.encodeRecord(d, flags: r.flags, cumulativeDrops: r.drops, timestamp: r.time, into: &w)
            }
        }
        #expect(w.count == length)
    }
    return out
}

struct ParsedRecord: Equatable {
    var original: UInt32
    var flags: UInt32
    var drops: UInt32
    var time: Int64
    var data: [UInt8]
    var offset: Int
}

/// All records, or the error that stopped the reader (with the records before it).
func readAll(_ bytes: [UInt8], datalink: BTSnoopDatalink? = .h4) -> (records: [ParsedRecord], error: WireError?) {
    bytes.withUnsafeBytes { buf in
        var out: [ParsedRecord] = []
        do throws(WireError) {
            var r = try BTSnoopReader(buf, expectedDatalink: datalink)
            while let rec = try r.next() {
                out.append(ParsedRecord(original: rec.originalLength, flags: rec.flags.rawValue, drops: rec.cumulativeDrops,
                                        time: rec.timestamp, data: Array(rec.data), offset: rec.offset))
            }
            return (out, nil)
        } catch {
            return (out, error)
        }
    }
}

@Suite struct BTSnoopTests {
    static let reset = h("01 03 0c 00")
    static let resetComplete = h("04 0e 04 01 03 0c 00")
    static let acl = h("02 40 20 07 00 03 00 04 00 0a 03 00")
    // 2024-01-02T03:04:05.678901Z in Unix microseconds.
    static let unixTime: Int64 = 1_704_164_645_678_901

    @Test func fileHeaderBytes() throws {
        let file = try btsnoopFile([])
        #expect(file == h("62 74 73 6e 6f 6f 70 00  00 00 00 01  00 00 03 ea"))
        #expect(Array("btsnoop".utf8) + [0] == Array(file[0 ..< 8]))
        #expect(readAll(file).records.isEmpty)
        #expect(readAll(file).error == nil)
    }

    @Test func epochDeltaIsYearZeroToUnixEpoch() {
        // The constant Wireshark and BlueZ use: a whole number of days (719 540).
        let days: Int64 = 719_540
        #expect(BTSnoop.epochDelta == days * 86_400 * 1_000_000)
        #expect(BTSnoop.timestamp(unixMicroseconds: 0) == 0x00DC_DDB3_0F2F_8000)
    }

    @Test func recordBytes() throws {
        let t = BTSnoop.timestamp(unixMicroseconds: Self.unixTime)
        let file = try btsnoopFile([(Self.reset, BTSnoopRecordFlags(.command, received: false), 0, t)])
        let record = Array(file[16...])
        #expect(record == h("00 00 00 04  00 00 00 04  00 00 00 02  00 00 00 00") + bigEndian(t) + Self.reset)
    }

    func bigEndian(_ v: Int64) -> [UInt8] { (0 ..< 8).map { UInt8(truncatingIfNeeded: v >> (56 - 8 * $0)) } }

    @Test func flagsForH4Types() {
        #expect(BTSnoopRecordFlags(.command, received: false).rawValue == 2)
        #expect(BTSnoopRecordFlags(.event, received: true).rawValue == 3)
        #expect(BTSnoopRecordFlags(.acl, received: false).rawValue == 0)
        #expect(BTSnoopRecordFlags(.acl, received: true).rawValue == 1)
        #expect(BTSnoopRecordFlags(.iso, received: true).isReceived)
        #expect(!BTSnoopRecordFlags(.iso, received: true).isCommandOrEvent)
    }

    @Test func roundTrip() throws {
        let t = BTSnoop.timestamp(unixMicroseconds: Self.unixTime)
        let input: [(data: [UInt8], flags: BTSnoopRecordFlags, drops: UInt32, time: Int64)] = [
            (Self.reset, BTSnoopRecordFlags(.command, received: false), 0, t),
            (Self.resetComplete, BTSnoopRecordFlags(.event, received: true), 0, t + 1500),
            (Self.acl, BTSnoopRecordFlags(.acl, received: true), 7, t + 2_000_000),
            ([], BTSnoopRecordFlags(rawValue: 0), 0, -5),
        ]
        let file = try btsnoopFile(input)
        let (records, error) = readAll(file)
        #expect(error == nil)
        #expect(records.count == input.count)
        var offset = 16
        for (r, i) in zip(records, input) {
            #expect(r.data == i.data)
            #expect(r.original == UInt32(i.data.count))
            #expect(r.flags == i.flags.rawValue)
            #expect(r.drops == i.drops)
            #expect(r.time == i.time)
            #expect(r.offset == offset)
            offset += 24 + i.data.count
        }
        file.withUnsafeBytes { buf in
            var reader = try? BTSnoopReader(buf)
            let first = try? reader?.next()
            #expect(first?.unixMicroseconds == Self.unixTime)
            #expect(first?.isComplete == true)
        }
    }

    @Test func reencodingReproducesTheFile() throws {
        let file = try btsnoopFile([
            (Self.resetComplete, BTSnoopRecordFlags(.event, received: true), 3, 12345),
            (Self.acl, BTSnoopRecordFlags(.acl, received: false), 4, 67890),
        ])
        var out = [UInt8](repeating: 0, count: file.count)
        try file.withUnsafeBytes { buf in
            try out.withUnsafeMutableBytes { o in
                var w = ByteWriter(o)
                var r = try BTSnoopReader(buf)
                try BTSnoop.encodeFileHeader(datalink: r.datalink, into: &w)
                while let rec = try r.next() { try rec.encode(into: &w) }
                #expect(w.count == file.count)
            }
        }
        #expect(out == file)
    }

    @Test func truncationAtEveryLength() throws {
        let file = try btsnoopFile([
            (Self.reset, BTSnoopRecordFlags(.command, received: false), 0, 1),
            (Self.resetComplete, BTSnoopRecordFlags(.event, received: true), 0, 2),
        ])
        let second = 16 + 24 + Self.reset.count
        for n in 0 ..< file.count {
            let (records, error) = readAll(Array(file[0 ..< n]))
            switch n {
            case 0 ..< 16:
                #expect(error == werr(.truncated, n), "length \(n)")
            case 16:
                #expect(error == nil && records.isEmpty)
            case 17 ..< second:
                #expect(error == werr(.truncated, 16), "length \(n)")
                #expect(records.isEmpty)
            case second:
                #expect(error == nil && records.count == 1)
            default:
                #expect(error == werr(.truncated, second), "length \(n)")
                #expect(records.count == 1)
            }
        }
        #expect(readAll(file).records.count == 2)
    }

    @Test func badHeaders() throws {
        var file = try btsnoopFile([])
        file[3] = 0x4E // "btsNoop"
        #expect(readAll(file).error == werr(.invalidValue, 0))
        file = try btsnoopFile([])
        file[11] = 2
        #expect(readAll(file).error == werr(.invalidValue, 8))
        file = try btsnoopFile([], datalink: .hciUnencapsulated)
        #expect(readAll(file).error == werr(.invalidValue, 12))
        #expect(readAll(file, datalink: nil).error == nil)
        #expect(readAll(file, datalink: .hciUnencapsulated).error == nil)
    }

    @Test func includedLongerThanOriginalIsAnError() throws {
        var file = try btsnoopFile([(Self.reset, BTSnoopRecordFlags(.command, received: false), 0, 1)])
        file[19] = 3 // original length 3 < included 4
        #expect(readAll(file).error == werr(.invalidLength, 16))
        file[19] = 9 // cut packet: original 9, included 4
        let (records, error) = readAll(file)
        #expect(error == nil)
        #expect(records.first?.original == 9)
    }

    @Test func hugeIncludedLengthIsTruncatedNotATrap() throws {
        var file = try btsnoopFile([(Self.reset, BTSnoopRecordFlags(.command, received: false), 0, 1)])
        for i in 16 ..< 24 { file[i] = 0xFF }
        #expect(readAll(file).error == werr(.truncated, 16))
    }

    @Test func encoderRejectsOriginalShorterThanData() {
        var out = [UInt8](repeating: 0, count: 64)
        let e: WireError? = out.withUnsafeMutableBytes { o in
            Self.reset.withUnsafeBytes { d in
                var w = ByteWriter(o)
                do throws(WireError) {
                    try BTSnoop.encodeRecord(d, originalLength: 2, flags: BTSnoopRecordFlags(rawValue: 0), timestamp: 0, into: &w)
                    return nil
                } catch { return error }
            }
        }
        #expect(e?.code == .invalidLength)
    }
}

/// A WireError to compare against (equality ignores the reason).
private func werr(_ code: WireError.Code, _ offset: Int) -> WireError { WireError(code, at: offset, "") }
