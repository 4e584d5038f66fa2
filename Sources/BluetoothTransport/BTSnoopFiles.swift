import BluetoothWire
import Glibc

/// Writes every packet to a btsnoop file (datalink 1002, H4) that Wireshark and
/// `tshark -r` open. Buffered: records collect in memory and go to the file when the
/// buffer fills, on ``flush()`` and on ``close()``. Every failure is thrown; `close()`
/// must be called to see the errors of the final flush (deinit closes silently as a
/// last resort).
public final class BTSnoopWriter {
    /// The file written.
    public let path: String
    private let system: SystemCalls
    private var fd: Int32
    private let buffer: UnsafeMutableRawBufferPointer
    private var used = 0
    /// Records written so far.
    public private(set) var recordCount = 0
    /// Wall-clock time in microseconds since the Unix epoch (replaceable in tests).
    private let clock: () -> Int64

    /// The wall clock in microseconds since 1970 (CLOCK_REALTIME).
    public static func realtimeMicroseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) &* 1_000_000 &+ Int64(ts.tv_nsec / 1000)
    }

    /// Creates (or truncates) `path` and writes the file header.
    public init(path: String, bufferSize: Int = 64 * 1024, system: SystemCalls = .live, clock: @escaping () -> Int64 = BTSnoopWriter.realtimeMicroseconds) throws(TransportError) {
        self.path = path
        self.system = system
        self.clock = clock
        let flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC
        // 0600, as the bond store: a capture holds the keys that pairing and encryption
        // carry (LE Enable Encryption, LTK replies, SMP key distribution).
        switch system.valueOrErrno({ path.withCString { system.open($0, flags, 0o600) } }) {
        case .success(let f):
            fd = f
            // An older capture truncated in place keeps its mode otherwise.
            _ = fchmod(f, 0o600)
        case .failure(let e):
            let kind: TransportError.Kind = (e == .accessDenied || e == .permissionDenied) ? .permissionDenied
                : e == .noSuchFile ? .notFound : .io
            throw TransportError(kind, "cannot create the btsnoop file \(path): \(e)", errno: e.rawValue)
        }
        // Room for the header and the largest H4 packet's record.
        let size = Swift.max(bufferSize, BTSnoop.encodedRecordLength(dataLength: 1 + H4Deframer.defaultMaximumPacketLength) + BTSnoop.fileHeaderLength)
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        var w = ByteWriter(buffer)
        do throws(WireError) {
            try BTSnoop.encodeFileHeader(datalink: .h4, into: &w)
        } catch {
            preconditionFailure("the buffer holds the 16-byte header")
        }
        used = w.count
        try flush()
    }

    deinit {
        if fd >= 0 {
            try? flush()
            system.closeOnce(fd)
        }
        buffer.deallocate()
    }

    /// Appends one packet (H4 indicator + HCI packet). `received` is true for packets
    /// from the controller. `unixMicroseconds` defaults to the wall clock now.
    public func append(_ packet: UnsafeRawBufferPointer, received: Bool, unixMicroseconds: Int64? = nil) throws(TransportError) {
        guard fd >= 0 else { throw TransportError(.closed, "the btsnoop file \(path) is closed") }
        let type = packet.isEmpty ? H4PacketType(rawValue: 0) : H4PacketType(rawValue: packet[0])
        let needed = BTSnoop.encodedRecordLength(dataLength: packet.count)
        if buffer.count - used < needed { try flush() }
        let time = BTSnoop.timestamp(unixMicroseconds: unixMicroseconds ?? clock())
        var w = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: buffer[used...]))
        do throws(WireError) {
            try BTSnoop.encodeRecord(packet, flags: BTSnoopRecordFlags(type, received: received), timestamp: time, into: &w)
        } catch {
            throw TransportError(.io, "cannot record a \(packet.count)-byte packet in \(path): \(error)")
        }
        used += w.count
        recordCount += 1
    }

    /// Writes the buffered records to the file.
    public func flush() throws(TransportError) {
        guard used > 0 else { return }
        guard fd >= 0 else { throw TransportError(.closed, "the btsnoop file \(path) is closed") }
        let bytes = UnsafeRawBufferPointer(rebasing: buffer[0 ..< used])
        switch system.writeAll(fd, bytes, timeoutMilliseconds: 5000) {
        case .success:
            used = 0
        case .failure(.errno(let e)):
            throw TransportError(.io, "writing the btsnoop file \(path) failed: \(e)", errno: e.rawValue)
        case .failure(.timedOut):
            throw TransportError(.io, "writing the btsnoop file \(path) timed out")
        }
    }

    /// Flushes and closes the file. Idempotent; the first failure is thrown (the file
    /// is closed either way).
    public func close() throws(TransportError) {
        guard fd >= 0 else { return }
        defer {
            if fd >= 0 {
                system.closeOnce(fd)
                fd = -1
            }
        }
        try flush()
        let f = fd
        fd = -1
        if system.close(f) != 0 {
            let e = Errno.current
            throw TransportError(.io, "closing the btsnoop file \(path) failed (data may be lost): \(e)", errno: e.rawValue)
        }
    }
}

/// A btsnoop file read whole into memory.
///
/// ```swift
/// let file = try BTSnoopFile(path: "scan.btsnoop")
/// var records = file.records()
/// while let r = try records.next() { ... r.data ... }   // keep `file` alive meanwhile
/// ```
public final class BTSnoopFile {
    /// The file read.
    public let path: String
    /// The file's bytes; owned by this object.
    public let bytes: UnsafeRawBufferPointer
    /// The datalink its header declares.
    public let datalink: BTSnoopDatalink

    /// Reads `path` and checks its header (magic, version 1, datalink `expectedDatalink`).
    public init(path: String, expectedDatalink: BTSnoopDatalink? = .h4, system: SystemCalls = .live) throws(TransportError) {
        self.path = path
        let fd = try Self.openForReading(path, system)
        defer { system.closeOnce(fd) }
        var capacity = 64 * 1024
        var storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        var count = 0
        while true {
            if count == capacity {
                let bigger = UnsafeMutableRawPointer.allocate(byteCount: capacity * 2, alignment: 16)
                bigger.copyMemory(from: storage, byteCount: count)
                storage.deallocate()
                storage = bigger
                capacity *= 2
            }
            let at = storage + count
            let room = capacity - count
            switch system.valueOrErrno({ system.read(fd, at, room) }) {
            case .success(0):
                break
            case .success(let n):
                count += n
                continue
            case .failure(let e):
                storage.deallocate()
                throw TransportError(.io, "reading \(path) failed: \(e)", errno: e.rawValue)
            }
            break
        }
        let bytes = UnsafeRawBufferPointer(start: storage, count: count)
        do throws(WireError) {
            let reader = try BTSnoopReader(bytes, expectedDatalink: expectedDatalink)
            self.datalink = reader.datalink
        } catch {
            storage.deallocate()
            throw BTSnoopFile.error(error, path: path)
        }
        self.bytes = bytes
    }

    deinit { UnsafeMutableRawPointer(mutating: bytes.baseAddress)?.deallocate() }

    /// A reader over the records. Valid while this object is alive.
    public func records() -> BTSnoopReader {
        do throws(WireError) {
            return try BTSnoopReader(bytes, expectedDatalink: nil)
        } catch {
            preconditionFailure("the header was checked in init")
        }
    }

    /// Calls `body` with every record, in order; a malformed record ends it with `.malformedFile`.
    public func forEachRecord(_ body: (BTSnoopRecord) throws -> Void) throws {
        var reader = records()
        while true {
            let record: BTSnoopRecord?
            do throws(WireError) {
                record = try reader.next()
            } catch {
                throw BTSnoopFile.error(error, path: path)
            }
            guard let record else { return }
            try body(record)
        }
    }

    /// Reads the capture at `path` in blocks of `blockSize` bytes (more for a larger
    /// record) and calls `body` with every record in order: memory stays the same
    /// whatever the file's size. Errors as ``init(path:expectedDatalink:system:)`` and
    /// ``forEachRecord(_:)`` give them; the records before a damaged one are delivered.
    public static func stream(path: String, expectedDatalink: BTSnoopDatalink? = .h4, blockSize: Int = 1 << 20,
                              system: SystemCalls = .live, _ body: (BTSnoopRecord) throws -> Void) throws {
        let fd = try openForReading(path, system)
        defer { system.closeOnce(fd) }
        var capacity = max(blockSize, BTSnoop.fileHeaderLength + BTSnoop.recordHeaderLength)
        var storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        defer { storage.deallocate() }
        var filled = 0
        var atEnd = false
        /// Reads until the buffer is full or the file ends.
        func fill() throws(TransportError) {
            while filled < capacity && !atEnd {
                switch system.valueOrErrno({ system.read(fd, storage + filled, capacity - filled) }) {
                case .success(0): atEnd = true
                case .success(let n): filled += n
                case .failure(let e): throw TransportError(.io, "reading \(path) failed: \(e)", errno: e.rawValue)
                }
            }
        }
        try fill()
        let datalink: BTSnoopDatalink
        do throws(WireError) {
            datalink = try BTSnoopReader(UnsafeRawBufferPointer(start: storage, count: filled),
                                         expectedDatalink: expectedDatalink).datalink
        } catch {
            throw BTSnoopFile.error(error, path: path)
        }
        var start = BTSnoop.fileHeaderLength     // of the unread bytes in the buffer
        var fileOffset = BTSnoop.fileHeaderLength // of storage + start
        while true {
            var reader = BTSnoopReader(window: UnsafeRawBufferPointer(start: storage + start, count: filled - start),
                                       fileOffset: fileOffset, datalink: datalink)
            var cut = false
            while true {
                let record: BTSnoopRecord?
                do throws(WireError) {
                    record = try reader.next()
                } catch {
                    // A record running past the window is read whole after the next fill.
                    guard error.code == .truncated, !atEnd else { throw BTSnoopFile.error(error, path: path) }
                    cut = true
                    break
                }
                guard let record else { break }
                try body(record)
            }
            start += reader.offset
            fileOffset += reader.offset
            if !cut && atEnd { return }
            // Keep the unread tail, grow for a record larger than the buffer, read on.
            let tail = filled - start
            if tail >= BTSnoop.recordHeaderLength {
                let included = Int(UInt32(bigEndian: (storage + start).loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
                let needed = BTSnoop.recordHeaderLength + included
                // No HCI packet comes near this: a length from a damaged file, not a record.
                guard included <= 1 << 24 else {
                    var e = TransportError(.malformedFile, "\(path): the record at byte \(fileOffset) claims \(included) bytes; not a valid btsnoop capture from there on")
                    e.streamOffset = fileOffset
                    throw e
                }
                if needed > capacity {
                    let bigger = UnsafeMutableRawPointer.allocate(byteCount: needed, alignment: 16)
                    bigger.copyMemory(from: storage + start, byteCount: tail)
                    storage.deallocate()
                    storage = bigger
                    capacity = needed
                    start = 0
                    filled = tail
                }
            }
            if start > 0 {
                memmove(storage, storage + start, tail)
                start = 0
                filled = tail
            }
            try fill()
        }
    }

    /// Opens `path` read-only; the user-facing error when it cannot be.
    static func openForReading(_ path: String, _ system: SystemCalls) throws(TransportError) -> Int32 {
        switch system.valueOrErrno({ path.withCString { system.open($0, O_RDONLY | O_CLOEXEC, 0) } }) {
        case .success(let f): return f
        case .failure(let e):
            let kind: TransportError.Kind = (e == .accessDenied || e == .permissionDenied) ? .permissionDenied
                : e == .noSuchFile ? .notFound : .io
            throw TransportError(kind, "cannot open \(path): \(e)", errno: e.rawValue)
        }
    }

    /// The user-facing error for a format problem at `error.offset`.
    public static func error(_ error: WireError, path: String) -> TransportError {
        var e = TransportError(.malformedFile, "\(path): not a valid btsnoop H4 capture: \(error)")
        if error.code == .truncated && error.offset >= BTSnoop.fileHeaderLength {
            e.message = "\(path): the record at byte \(error.offset) is cut off (the capture was not closed cleanly); the records before it are valid"
        }
        e.streamOffset = error.offset
        return e
    }
}
