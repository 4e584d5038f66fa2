import BluetoothTransport
import Glibc

// Errors are BluetoothTransport's `Errno` (one type for the whole stack).

/// The host runtime's system calls: one EINTR loop, nothing else clever.
enum Sys {
    /// Retries `body` while it fails with EINTR; returns its result or the errno.
    @inline(__always)
    static func retrying<T: FixedWidthInteger>(_ body: () -> T) -> Result<T, Errno> {
        retryingOnInterrupt(body)
    }

    /// Monotonic time in nanoseconds (the stack's one clock, ``monotonicNow()``).
    @inline(__always)
    static func now() -> UInt64 { monotonicNow() }

    /// A non-blocking close-on-exec pipe used to wake a poller: (read end, write end).
    /// (Glibc's Swift module exports neither eventfd nor pipe2.)
    static func wakePipe() -> Result<(Int32, Int32), Errno> {
        var fds: [Int32] = [-1, -1]
        let r = fds.withUnsafeMutableBufferPointer { Glibc.pipe($0.baseAddress) }
        guard r == 0 else { return .failure(.current) }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        return .success((fds[0], fds[1]))
    }

    /// Wakes the poller of a wake pipe. EAGAIN (pipe full: a wakeup is pending anyway) is fine.
    static func signal(wakePipe fd: Int32) {
        var one: UInt8 = 1
        _ = retrying { Glibc.write(fd, &one, 1) }
    }

    /// Empties a wake pipe.
    static func drain(wakePipe fd: Int32) {
        var buffer = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while case .success(let n) = retrying({ Glibc.read(fd, &buffer, 64) }), n == 64 {}
    }

    /// poll(2) with EINTR treated as "nothing ready" (the caller recomputes its timeout).
    static func poll(_ fds: inout [pollfd], timeoutMilliseconds: Int32) -> Result<Int32, Errno> {
        let r = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), timeoutMilliseconds) }
        if r >= 0 { return .success(r) }
        let e = Errno.current
        return e == .interrupted ? .success(0) : .failure(e)
    }

    /// close(2), never retried (Linux releases the descriptor even on EINTR).
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }
}
