import BluetoothWire
import HCIGATTFormat
#if canImport(Glibc)
@preconcurrency import Glibc
import Synchronization
#endif

/// The tool's version (a global outside main.swift: initialised on first use, not in file order).
let version = "0.1.0"

/// Line-oriented output without Foundation or stdio: stdout through one buffer, handed to
/// write(2) a line at a time (live commands, and any terminal) or in pieces of 64 KiB
/// (``batch``: replay, decode); stderr unbuffered so errors interleave correctly with
/// progress.
enum Console {
    /// Bytes given to write(2) at once when the output is not a terminal.
    static let blockSize = 1 << 16

    private static let pending = Mutex(OutputBuffer(capacity: blockSize))
    /// A terminal sees each line as it is printed.
    private static let terminal = isatty(1) != 0
    private static let batchMode = Atomic<Bool>(false)

    /// Output is a batch (replay, decode): lines are gathered into 64 KiB writes. Otherwise
    /// (the live commands) each line is written as it comes, so a program reading the
    /// pipe sees a device or a measurement when it happens.
    static var batch: Bool {
        get { batchMode.load(ordering: .relaxed) }
        set { batchMode.store(newValue, ordering: .relaxed) }
    }

    private static var lineBuffered: Bool { terminal || !batch }

    /// One line (a newline is added).
    static func out(_ s: String) {
        pending.withLock { buffer in
            buffer.utf8(s)
            buffer.byte(UInt8(ascii: "\n"))
            if lineBuffered || buffer.count >= blockSize { drain(&buffer) }
        }
    }

    /// Lines already rendered into `lines` (each ending in a newline), which is emptied.
    /// A full block is written straight from `lines`, without a copy.
    static func write(_ lines: inout OutputBuffer) {
        pending.withLock { buffer in
            if buffer.count > 0 {
                buffer.append(lines)
                lines.removeAll()
                if lineBuffered || buffer.count >= blockSize { drain(&buffer) }
            } else if lineBuffered || lines.count >= blockSize {
                drain(&lines)
            } else {
                swap(&buffer, &lines)
            }
        }
    }

    static func err(_ s: String) { errRaw(s + "\n") }

    /// Writes to stderr as is (no newline), e.g. a progress line ending in "\r".
    static func errRaw(_ s: String) {
        var line = s
        _ = line.withUTF8 { writeAll(2, UnsafeRawBufferPointer($0)) }
    }

    /// Writes what is pending on stdout.
    static func flush() {
        pending.withLock { drain(&$0) }
    }

    /// The same as ``flush()`` (stdout only; kept for the commands reading stdin).
    static func flushOut() { flush() }

    private static let closed = Atomic<Bool>(false)
    /// Writing to stdout failed (SIGPIPE is ignored: a closed pipe gives EPIPE instead).
    static var stdoutClosed: Bool { closed.load(ordering: .relaxed) }

    private static func drain(_ buffer: inout OutputBuffer) {
        guard buffer.count > 0 else { return }
        let ok = buffer.withBytes { writeAll(1, $0) }
        buffer.removeAll()
        // Only a reader gone away (EPIPE) means stop; output after that is dropped.
        if !ok, errno == EPIPE, !closed.exchange(true, ordering: .relaxed) { StopSwitch.stopCurrent() }
    }

    @discardableResult
    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var rest = bytes
        while !rest.isEmpty {
            let n = Glibc.write(fd, rest.baseAddress, rest.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
        }
        return true
    }
}
