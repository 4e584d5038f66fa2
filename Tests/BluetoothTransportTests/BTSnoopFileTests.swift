import BluetoothWire
import Glibc
import Testing
@testable import BluetoothTransport

func temporaryPath(_ name: String) -> String {
    "/tmp/hcigatt-test-\(getpid())-\(UInt32.random(in: 0 ... .max))-\(name)"
}

@Suite struct BTSnoopFileTests {
    static let packets: [(bytes: [UInt8], received: Bool)] = [
        (h("01 03 0c 00"), false),
        (h("04 0e 04 01 03 0c 00"), true),
        (h("04 3e 0c 02 01 00 00 01 02 03 04 05 06 00 c5"), true),
        (h("02 40 20 07 00 03 00 04 00 0a 03 00"), false),
    ]

    func write(_ path: String, bufferSize: Int = 64 * 1024) throws {
        let w = try BTSnoopWriter(path: path, bufferSize: bufferSize, clock: { 1_700_000_000_000_000 })
        for (i, p) in Self.packets.enumerated() {
            try p.bytes.withUnsafeBytes { b in
                try w.append(b, received: p.received, unixMicroseconds: i == 0 ? nil : 1_700_000_000_000_000 + Int64(i) * 1000)
            }
        }
        #expect(w.recordCount == Self.packets.count)
        try w.close()
        try w.close() // idempotent
    }

    func readBack(_ path: String) throws -> [(bytes: [UInt8], flags: UInt32, time: Int64)] {
        let f = try BTSnoopFile(path: path)
        #expect(f.datalink == .h4)
        var out: [(bytes: [UInt8], flags: UInt32, time: Int64)] = []
        try f.forEachRecord { r in out.append((Array(r.data), r.flags.rawValue, r.unixMicroseconds)) }
        return out
    }

    @Test("A capture holds keys: it is made 0600, an older 0644 one it replaces too")
    func capturesAreReadableByTheOwnerOnly() throws {
        for existing in [false, true] {
            let path = temporaryPath("mode.btsnoop")
            defer { unlink(path) }
            if existing {
                let fd = open(path, O_WRONLY | O_CREAT, 0o644)
                #expect(fd >= 0)
                _ = fchmod(fd, 0o644)
                close(fd)
            }
            try write(path)
            var st = stat()
            #expect(stat(path, &st) == 0)
            #expect(st.st_mode & 0o777 == 0o600, "existing \(existing): \(String(st.st_mode & 0o777, radix: 8))")
        }
    }

    @Test(arguments: [64 * 1024, 1]) func writtenFileParsesBack(_ bufferSize: Int) throws {
        let path = temporaryPath("roundtrip.btsnoop")
        defer { unlink(path) }
        try write(path, bufferSize: bufferSize)
        let records = try readBack(path)
        #expect(records.map(\.bytes) == Self.packets.map(\.bytes))
        #expect(records.map(\.flags) == [2, 3, 3, 0])
        #expect(records.map(\.time) == [0, 1, 2, 3].map { 1_700_000_000_000_000 + $0 * 1000 })
        let f = try BTSnoopFile(path: path)
        #expect(Array(f.bytes[0 ..< 16]) == h("62 74 73 6e 6f 6f 70 00 00 00 00 01 00 00 03 ea"))
        #expect(f.bytes.count == 16 + Self.packets.reduce(0) { $0 + 24 + $1.bytes.count })
    }

    @Test func realClockIsNow() throws {
        let path = temporaryPath("clock.btsnoop")
        defer { unlink(path) }
        let before = BTSnoopWriter.realtimeMicroseconds()
        let w = try BTSnoopWriter(path: path)
        try h("01 03 0c 00").withUnsafeBytes { try w.append($0, received: false) }
        try w.close()
        let after = BTSnoopWriter.realtimeMicroseconds()
        let t = try readBack(path).first?.time ?? 0
        #expect(t >= before && t <= after)
    }

    /// Read in blocks smaller than a record (and than the file header): the same records as
    /// the whole file gives, with their offsets in the file.
    @Test(arguments: [40, 41, 57, 1 << 20]) func streamedInBlocks(_ blockSize: Int) throws {
        let path = temporaryPath("blocks.btsnoop")
        defer { unlink(path) }
        try write(path)
        var streamed: [(bytes: [UInt8], flags: UInt32, time: Int64, offset: Int)] = []
        try BTSnoopFile.stream(path: path, blockSize: blockSize) { r in
            streamed.append((Array(r.data), r.flags.rawValue, r.unixMicroseconds, r.offset))
        }
        let whole = try readBack(path)
        #expect(streamed.map(\.bytes) == whole.map(\.bytes))
        #expect(streamed.map(\.flags) == whole.map(\.flags))
        #expect(streamed.map(\.time) == whole.map(\.time))
        var offset = 16
        var offsets: [Int] = []
        for p in Self.packets {
            offsets.append(offset)
            offset += 24 + p.bytes.count
        }
        #expect(streamed.map(\.offset) == offsets)
    }

    @Test(arguments: [40, 1 << 20]) func streamedTruncatedCaptureReportsTheOffset(_ blockSize: Int) throws {
        let path = temporaryPath("cut-stream.btsnoop")
        defer { unlink(path) }
        try write(path)
        let last = 16 + Self.packets.dropLast().reduce(0) { $0 + 24 + $1.bytes.count }
        #expect(truncate(path, off_t(last + 30)) == 0)
        var seen = 0
        do {
            try BTSnoopFile.stream(path: path, blockSize: blockSize) { _ in seen += 1 }
            Issue.record("no error")
        } catch let e as TransportError {
            #expect(e.kind == .malformedFile)
            #expect(e.streamOffset == last)
            #expect(e.message.contains("byte \(last) is cut off"))
        }
        #expect(seen == Self.packets.count - 1)
    }

    @Test func streamedRecordClaimingHugeLengthIsAnError() throws {
        let path = temporaryPath("huge.btsnoop")
        defer { unlink(path) }
        var file = h("62 74 73 6e 6f 6f 70 00 00 00 00 01 00 00 03 ea")
        // Original and included length 0x7FFFFFFF: no capture holds such a record.
        file += h("7f ff ff ff 7f ff ff ff 00 00 00 03 00 00 00 00 00 e0 3a b4 4a 67 60 00") + [UInt8](repeating: 0, count: 64)
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
        _ = file.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        do {
            try BTSnoopFile.stream(path: path, blockSize: 64) { _ in Issue.record("no record expected") }
            Issue.record("no error")
        } catch let e as TransportError {
            #expect(e.kind == .malformedFile)
            #expect(e.streamOffset == 16)
        }
    }

    @Test func truncatedCaptureReportsTheOffset() throws {
        let path = temporaryPath("cut.btsnoop")
        defer { unlink(path) }
        try write(path)
        let last = 16 + Self.packets.dropLast().reduce(0) { $0 + 24 + $1.bytes.count }
        #expect(truncate(path, off_t(last + 30)) == 0)
        var seen = 0
        do {
            try BTSnoopFile(path: path).forEachRecord { _ in seen += 1 }
            Issue.record("no error")
        } catch let e as TransportError {
            #expect(e.kind == .malformedFile)
            #expect(e.streamOffset == last)
            #expect(e.message.contains("byte \(last) is cut off"))
        }
        #expect(seen == Self.packets.count - 1)
    }

    @Test func notABTSnoopFile() throws {
        let path = temporaryPath("junk")
        defer { unlink(path) }
        let fd = open(path, O_WRONLY | O_CREAT, 0o644)
        writeFully(fd, Array("hello, this is not a capture".utf8))
        close(fd)
        do {
            _ = try BTSnoopFile(path: path)
            Issue.record("parsed junk")
        } catch {
            #expect(error.kind == .malformedFile)
            #expect(error.message.contains("not a btsnoop file"))
        }
    }

    @Test func errorsAreReportedNotSilent() throws {
        do {
            _ = try BTSnoopWriter(path: "/nonexistent-dir/x.btsnoop")
            Issue.record("created a file in a missing directory")
        } catch {
            #expect(error.kind == .notFound)
            #expect(error.message.contains("/nonexistent-dir/x.btsnoop"))
        }
        do {
            _ = try BTSnoopFile(path: "/nonexistent-dir/x.btsnoop")
            Issue.record("opened a missing file")
        } catch {
            #expect(error.kind == .notFound)
        }
        // A full disk: /dev/full fails every write with ENOSPC.
        do {
            let w = try BTSnoopWriter(path: "/dev/full")
            _ = w
            Issue.record("writing the header to /dev/full succeeded")
        } catch {
            #expect(error.errno == ENOSPC)
        }
        let path = temporaryPath("closed.btsnoop")
        defer { unlink(path) }
        let w = try BTSnoopWriter(path: path)
        try w.close()
        #expect(throws: TransportError.self) { try h("01 03 0c 00").withUnsafeBytes { try w.append($0, received: false) } }
    }
}
