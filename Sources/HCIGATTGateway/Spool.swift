// The gateway's disk spool: every reading is written here when it arrives from the radio and
// stays until the broker has acknowledged it, so a broker, network or gateway restart loses
// nothing. Bounded: when full, the oldest readings go, and the caller is told how many.
#if canImport(Glibc)
import BluetoothTransport
import Glibc
#endif

/// A spool failure: the path and what went wrong.
public struct SpoolError: Error, Sendable, CustomStringConvertible {
    /// The file or directory concerned.
    public var path: String
    /// What went wrong (the system's words where it said).
    public var message: String
    public var description: String { "spool \(path): \(message)" }
}

/// Records (topic + payload) with increasing ids, in segment files of a directory.
///
/// Layout: `<first id, 16 hex digits>.seg` files of records, each `A5`, a 4-byte length,
/// the body (8-byte id, 2-byte topic length, topic, payload) and a CRC-32 of the body, all
/// little-endian; and `head`, the oldest id not yet acknowledged (written atomically).
/// Records are appended with write(2) and flushed by ``sync()`` (the gateway calls it every
/// second and when it stops): a power cut loses at most the last second. A record cut by a
/// crash, or one whose CRC fails, ends its segment: the file is cut back to the last good
/// record when the spool is opened.
public final class Spool {
    /// One spooled message.
    public struct Record: Sendable, Equatable {
        /// Its id: increasing by one per record.
        public var id: UInt64
        /// The MQTT topic (UTF-8).
        public var topic: [UInt8]
        /// The message.
        public var payload: [UInt8]
    }

    private struct Segment {
        var firstID: UInt64
        var size: Int
        var path: String
    }

    /// Where the segment files and the head are.
    public let directory: String
    /// Bytes the segments may take together.
    public let maxBytes: Int
    /// A segment is closed and a new one started at this size.
    public let segmentBytes: Int
    /// The oldest record not yet acknowledged.
    public private(set) var head: UInt64
    /// The id the next record gets.
    public private(set) var nextID: UInt64
    /// Records dropped because the spool was full, since it was opened.
    public private(set) var droppedCount: UInt64 = 0
    private var segments: [Segment] = []
    /// The segment appended to, open.
    private var writeFD: Int32 = -1
    private var headSaved: UInt64
    private var unsynced = false
    /// Where the last read stopped: the next id, its segment and offset.
    private var readCursor: (id: UInt64, segment: Int, offset: Int)?

    /// Opens (creating the directory, 0700) the spool in `directory`.
    public init(directory: String, maxBytes: Int) throws(SpoolError) {
        self.directory = directory
        self.maxBytes = max(maxBytes, 16 * 1024)
        segmentBytes = min(max(self.maxBytes / 8, 4096), 4 * 1024 * 1024)
        head = 0
        nextID = 0
        headSaved = 0
        try Self.makeDirectory(directory)
        head = Self.readHead(directory + "/head") ?? 0
        headSaved = head
        try load()
    }

    deinit {
        if writeFD >= 0 { Glibc.close(writeFD) }
    }

    /// Records not yet acknowledged.
    public var pendingCount: UInt64 { nextID - head }
    /// Bytes on disk.
    public var byteCount: Int { segments.reduce(0) { $0 + $1.size } }

    // MARK: opening

    private static func makeDirectory(_ path: String) throws(SpoolError) {
        var prefix = ""
        for part in path.split(separator: "/", omittingEmptySubsequences: false) {
            prefix += prefix.isEmpty && path.hasPrefix("/") ? "/" + part : (prefix.isEmpty ? String(part) : "/" + part)
            if prefix.isEmpty || prefix == "/" { continue }
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw SpoolError(path: prefix, message: "cannot create the directory: \(String(cString: strerror(errno)))")
            }
        }
        if let problem = privateDirectoryProblem(path) { throw SpoolError(path: path, message: problem) }
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else {
            throw SpoolError(path: path, message: "not a directory")
        }
        guard access(path, W_OK) == 0 else { throw SpoolError(path: path, message: "not writable") }
    }

    private static func readHead(_ path: String) -> UInt64? {
        guard let bytes = readFile(path), let text = String(validating: bytes, as: UTF8.self) else { return nil }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard parts.count == 2, parts[0] == "head" else { return nil }
        return UInt64(parts[1])
    }

    /// A whole file; nil when it cannot be opened, or (`strict`) when a read fails.
    static func readFile(_ path: String, strict: Bool = false) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && strict { return nil }
            guard n > 0 else { break }
            out += chunk[0 ..< n]
        }
        return out
    }

    /// Ids above this are not believed (a damaged name or head file): far more than any
    /// gateway writes, and far from overflowing.
    static let idLimit: UInt64 = 1 << 60

    private func load() throws(SpoolError) {
        var names: [(UInt64, String)] = []
        guard let dir = opendir(directory) else {
            throw SpoolError(path: directory, message: "cannot list: \(String(cString: strerror(errno)))")
        }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasSuffix(".seg"), name.count == 20, let first = UInt64(name.prefix(16), radix: 16) else { continue }
            guard first < Self.idLimit else {
                unlink("\(directory)/\(name)")  // an id no spool reaches: a damaged name
                continue
            }
            names.append((first, name))
        }
        closedir(dir)
        names.sort { $0.0 < $1.0 }
        if head >= Self.idLimit { head = 0 }
        var expected: UInt64?
        for (first, name) in names {
            let path = "\(directory)/\(name)"
            let (count, goodSize, fileSize) = try scan(path, first: first)
            // Records all acknowledged already (below the head): the segment has served.
            if first + count <= head {
                unlink(path)
                continue
            }
            // A segment that does not follow on from the one before (a gap, or a later one
            // after a segment cut short) is not trusted: what follows a gap is dropped.
            if let e = expected, first != e {
                unlink(path)
                continue
            }
            if goodSize < fileSize {
                guard truncate(path, off_t(goodSize)) == 0 else {
                    throw SpoolError(path: path, message: "cannot cut off a damaged record: \(String(cString: strerror(errno)))")
                }
            }
            if count == 0 {
                unlink(path)
                if expected == nil { expected = max(first, head) }
                continue
            }
            segments.append(Segment(firstID: first, size: goodSize, path: path))
            expected = first + count
        }
        nextID = max(expected ?? head, head)
        if let first = segments.first, head < first.firstID { head = first.firstID }
        if segments.isEmpty { head = nextID }
    }

    /// Counts the good records of a segment: (records, bytes they take, file size). A file
    /// that cannot be read is an error (not an empty segment, which would be deleted).
    private func scan(_ path: String, first: UInt64) throws(SpoolError) -> (UInt64, Int, Int) {
        guard let bytes = Self.readFile(path, strict: true) else {
            throw SpoolError(path: path, message: "cannot read: \(String(cString: strerror(errno)))")
        }
        var offset = 0, count: UInt64 = 0
        while let (id, next) = Self.recordBounds(bytes, at: offset), id == first + count, id < Self.idLimit {
            offset = next
            count += 1
        }
        return (count, offset, bytes.count)
    }

    /// The id and end of the record at `offset` when it is whole and its CRC matches.
    private static func recordBounds(_ bytes: [UInt8], at offset: Int) -> (UInt64, Int)? {
        guard offset + 5 <= bytes.count, bytes[offset] == 0xA5 else { return nil }
        let length = Int(le32(bytes, offset + 1))
        let bodyStart = offset + 5
        guard length >= 10, bodyStart + length + 4 <= bytes.count else { return nil }
        let crc = crc32(bytes, bodyStart, length)
        guard crc == le32(bytes, bodyStart + length) else { return nil }
        let topicLength = Int(bytes[bodyStart + 8]) | Int(bytes[bodyStart + 9]) << 8
        guard 10 + topicLength <= length else { return nil }
        return (le64(bytes, bodyStart), bodyStart + length + 4)
    }

    // MARK: writing

    /// Appends a record; returns its id and how many of the oldest records were dropped to
    /// keep within `maxBytes` (their ids are below the new ``head``).
    public func append(topic: [UInt8], payload: [UInt8]) throws(SpoolError) -> (id: UInt64, dropped: UInt64) {
        precondition(topic.count <= 0xFFFF)
        let id = nextID
        var record: [UInt8] = [0xA5]
        let length = 10 + topic.count + payload.count
        Self.put32(&record, UInt32(length))
        let bodyStart = record.count
        Self.put64(&record, id)
        record.append(UInt8(topic.count & 0xFF))
        record.append(UInt8(topic.count >> 8))
        record += topic
        record += payload
        Self.put32(&record, Self.crc32(record, bodyStart, length))
        if writeFD < 0 || segments.isEmpty || segments[segments.count - 1].size >= segmentBytes {
            try startSegment(firstID: id)
        }
        var written = 0
        while written < record.count {
            let n = record.withUnsafeBytes { write(writeFD, $0.baseAddress! + written, record.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                let message = String(cString: strerror(errno))
                // Cut back whatever part of the record went out.
                _ = ftruncate(writeFD, off_t(segments[segments.count - 1].size))
                throw SpoolError(path: segments[segments.count - 1].path, message: "cannot write: \(message)")
            }
            written += n
        }
        segments[segments.count - 1].size += record.count
        nextID += 1
        unsynced = true
        var dropped: UInt64 = 0
        while byteCount > maxBytes, segments.count > 1 {
            let oldest = segments.removeFirst()
            let end = segments[0].firstID
            if end > head {
                dropped += end - max(head, oldest.firstID)
                head = end
            }
            unlink(oldest.path)
            readCursor = nil
        }
        droppedCount += dropped
        return (id, dropped)
    }

    private func startSegment(firstID: UInt64) throws(SpoolError) {
        if writeFD >= 0 {
            _ = fdatasync(writeFD)
            Glibc.close(writeFD)
            writeFD = -1
        }
        let path = "\(directory)/\(Self.hex16(firstID)).seg"
        // Never through a symbolic link planted where the segment goes.
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SpoolError(path: path, message: "cannot create: \(String(cString: strerror(errno)))") }
        writeFD = fd
        segments.append(Segment(firstID: firstID, size: 0, path: path))
        // The directory entry must outlive a crash too.
        Self.syncDirectory(directory)
    }

    // MARK: reading

    /// Up to `maxCount` records from id `from` on (fewer at the end; none below the head).
    public func read(from: UInt64, maxCount: Int) throws(SpoolError) -> [Record] {
        var id = max(from, head)
        guard id < nextID, maxCount > 0 else { return [] }
        var segment: Int, offset: Int
        if let c = readCursor, c.id == id, c.segment < segments.count {
            (segment, offset) = (c.segment, c.offset)
        } else {
            guard let s = segments.lastIndex(where: { $0.firstID <= id }) else { return [] }
            (segment, offset) = (s, 0)
            // Skip to `id` from the start of its segment.
            var skip = id - segments[s].firstID
            let fd = open(segments[s].path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw SpoolError(path: segments[s].path, message: "cannot open: \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            var header = [UInt8](repeating: 0, count: 5)
            while skip > 0 {
                guard pread(fd, &header, 5, off_t(offset)) == 5, header[0] == 0xA5 else {
                    throw SpoolError(path: segments[s].path, message: "damaged record at offset \(offset)")
                }
                offset += 5 + Int(Self.le32(header, 1)) + 4
                skip -= 1
            }
        }
        var out: [Record] = []
        while out.count < maxCount, id < nextID, segment < segments.count {
            if offset >= segments[segment].size {
                segment += 1
                offset = 0
                continue
            }
            let s = segments[segment]
            let fd = open(s.path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw SpoolError(path: s.path, message: "cannot open: \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            while out.count < maxCount, offset < s.size {
                var header = [UInt8](repeating: 0, count: 5)
                guard pread(fd, &header, 5, off_t(offset)) == 5, header[0] == 0xA5 else {
                    throw SpoolError(path: s.path, message: "damaged record at offset \(offset)")
                }
                let length = Int(Self.le32(header, 1))
                guard offset + 9 + length <= s.size else {
                    throw SpoolError(path: s.path, message: "damaged record at offset \(offset)")
                }
                var body = [UInt8](repeating: 0, count: length + 4)
                guard length >= 10, pread(fd, &body, length + 4, off_t(offset + 5)) == length + 4,
                      Self.crc32(body, 0, length) == Self.le32(body, length) else {
                    throw SpoolError(path: s.path, message: "damaged record at offset \(offset)")
                }
                let recordID = Self.le64(body, 0)
                let topicLength = Int(body[8]) | Int(body[9]) << 8
                guard recordID == id, 10 + topicLength <= length else {
                    throw SpoolError(path: s.path, message: "record \(recordID) where \(id) was expected")
                }
                out.append(Record(id: id, topic: Array(body[10 ..< 10 + topicLength]),
                                  payload: Array(body[10 + topicLength ..< length])))
                offset += 5 + length + 4
                id += 1
            }
        }
        readCursor = (id, segment, offset)
        return out
    }

    // MARK: acknowledging

    /// Everything below `newHead` was acknowledged: whole segments below it are deleted (the
    /// head is written by ``sync()``).
    public func release(below newHead: UInt64) {
        guard newHead > head else { return }
        head = min(newHead, nextID)
        while segments.count > 1, segments[1].firstID <= head {
            unlink(segments.removeFirst().path)
            readCursor = nil
        }
        if segments.count == 1, head == nextID, segments[0].size >= segmentBytes {
            // All acknowledged and the segment full: start afresh with the next record.
            unlink(segments.removeFirst().path)
            if writeFD >= 0 { Glibc.close(writeFD); writeFD = -1 }
            readCursor = nil
        }
    }

    /// Flushes appended records and writes the head when it moved.
    public func sync() throws(SpoolError) {
        if unsynced, writeFD >= 0 {
            guard fdatasync(writeFD) == 0 else {
                throw SpoolError(path: directory, message: "fdatasync failed: \(String(cString: strerror(errno)))")
            }
            unsynced = false
        }
        if head != headSaved {
            try Self.writeAtomically(Array("head \(head)\n".utf8), to: directory + "/head", in: directory)
            headSaved = head
        }
    }

    /// Temporary file (a name no one can guess, made new: O_EXCL, never through a link),
    /// write, fsync, rename over `path`, fsync of the directory.
    static func writeAtomically(_ bytes: [UInt8], to path: String, in directory: String) throws(SpoolError) {
        let temporary = "\(path).\(getpid())-\(UInt64.random(in: 0 ... .max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SpoolError(path: temporary, message: "cannot create: \(String(cString: strerror(errno)))") }
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let ok = n == bytes.count && fsync(fd) == 0
        close(fd)
        guard ok, rename(temporary, path) == 0 else {
            let message = String(cString: strerror(errno))
            unlink(temporary)
            throw SpoolError(path: path, message: "cannot write: \(message)")
        }
        syncDirectory(directory)
    }

    static func syncDirectory(_ directory: String) {
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    // MARK: bytes

    static func hex16(_ v: UInt64) -> String {
        let digits = String(v, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    static func put32(_ out: inout [UInt8], _ v: UInt32) {
        for i in 0 ..< 4 { out.append(UInt8(truncatingIfNeeded: v >> UInt32(8 * i))) }
    }

    static func put64(_ out: inout [UInt8], _ v: UInt64) {
        for i in 0 ..< 8 { out.append(UInt8(truncatingIfNeeded: v >> UInt64(8 * i))) }
    }

    static func le32(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }

    static func le64(_ b: [UInt8], _ at: Int) -> UInt64 {
        var v: UInt64 = 0
        for i in (0 ..< 8).reversed() { v = v << 8 | UInt64(b[at + i]) }
        return v
    }

    private static let crcTable: [UInt32] = (0 ..< 256).map { n in
        var c = UInt32(n)
        for _ in 0 ..< 8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// CRC-32 (IEEE 802.3, as zlib) of `count` bytes from `start`.
    static func crc32(_ b: [UInt8], _ start: Int, _ count: Int) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for i in start ..< start + count { c = crcTable[Int((c ^ UInt32(b[i])) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}

/// A whole file's bytes; nil when it cannot be read.
public func readWholeFile(_ path: String) -> [UInt8]? { Spool.readFile(path) }
