import BluetoothWire
#if canImport(Glibc)
@preconcurrency import Glibc
import Synchronization
#endif

/// The tool's version (a global outside main.swift: initialised on first use, not in file order).
let version = "0.1.0"

/// The C stdout stream, read once (the global is a C variable Swift cannot prove safe).
nonisolated(unsafe) let standardOutput = stdout

/// Line-oriented output without Foundation: stdout through the stdlib's buffered `print`,
/// stderr unbuffered with write(2) so errors interleave correctly with progress.
enum Console {
    static func out(_ s: String) {
        print(s)
        // stdio flushes a full buffer by itself: a closed pipe shows here too.
        if ferror_unlocked(standardOutput) != 0 { checkStdout() }
    }

    static func err(_ s: String) { errRaw(s + "\n") }

    /// Writes to stderr as is (no newline), e.g. a progress line ending in "\r".
    static func errRaw(_ s: String) {
        var line = s
        line.withUTF8 { buf in
            var rest = UnsafeRawBufferPointer(buf)
            while !rest.isEmpty {
                let n = write(2, rest.baseAddress, rest.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return }
                rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            }
        }
    }

    static func flush() {
        fflush(nil)
        checkStdout()
    }

    /// Flushes stdout only. (fflush(NULL) also locks stdin, which a thread blocked in
    /// readLine holds: `serve --manual` would stop printing.)
    static func flushOut() {
        fflush(standardOutput)
        checkStdout()
    }

    private static let closed = Atomic<Bool>(false)
    /// Writing to stdout failed (SIGPIPE is ignored: a closed pipe gives EPIPE instead).
    static var stdoutClosed: Bool { closed.load(ordering: .relaxed) }

    /// A closed stdout stops the running command the clean way, once.
    private static func checkStdout() {
        // Only a reader gone away (EPIPE) means stop; other errors leave it to the command.
        guard ferror(standardOutput) != 0, errno == EPIPE, !closed.exchange(true, ordering: .relaxed) else { return }
        StopSwitch.stopCurrent()
    }
}

