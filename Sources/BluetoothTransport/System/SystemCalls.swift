import CBluetooth
import Glibc

/// Every system call the transports make, as replaceable function values.
///
/// `SystemCalls.live` calls the C library. Tests build a copy and replace single
/// entries to inject failures the kernel would produce (EINTR, EBUSY, EAGAIN, EPERM)
/// without a kernel — the idea of swift-system's Mocking.swift. Each entry follows the C
/// convention: it returns -1 (or a negative count) and sets `errno` on failure; a mock
/// sets `Errno.current` before returning -1.
///
/// Transports keep the `SystemCalls` they were opened with and use only it.
public struct SystemCalls: Sendable {
    /// socket(2).
    public var socket: @Sendable (_ domain: Int32, _ type: Int32, _ protocol: Int32) -> Int32
    /// bind(2).
    public var bind: @Sendable (_ fd: Int32, _ address: UnsafeRawPointer, _ length: socklen_t) -> Int32
    /// connect(2).
    public var connect: @Sendable (_ fd: Int32, _ address: UnsafeRawPointer, _ length: socklen_t) -> Int32
    /// open(2).
    public var open: @Sendable (_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32
    /// read(2).
    public var read: @Sendable (_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int
    /// write(2).
    public var write: @Sendable (_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int
    /// send(2).
    public var send: @Sendable (_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int
    /// `ioctl(fd, request, argument)`; the argument is a pointer's bit pattern or an integer.
    public var ioctl: @Sendable (_ fd: Int32, _ request: UInt, _ argument: Int) -> Int32
    /// setsockopt(2).
    public var setsockopt: @Sendable (_ fd: Int32, _ level: Int32, _ name: Int32, _ value: UnsafeRawPointer, _ length: socklen_t) -> Int32
    /// getsockopt(2).
    public var getsockopt: @Sendable (_ fd: Int32, _ level: Int32, _ name: Int32, _ value: UnsafeMutableRawPointer, _ length: UnsafeMutablePointer<socklen_t>) -> Int32
    /// poll(2).
    public var poll: @Sendable (_ fds: UnsafeMutablePointer<pollfd>, _ count: nfds_t, _ timeoutMilliseconds: Int32) -> Int32
    /// tcgetattr(3).
    public var tcgetattr: @Sendable (_ fd: Int32, _ attributes: UnsafeMutablePointer<termios>) -> Int32
    /// tcsetattr(3).
    public var tcsetattr: @Sendable (_ fd: Int32, _ when: Int32, _ attributes: UnsafePointer<termios>) -> Int32
    /// tcflush(3).
    public var tcflush: @Sendable (_ fd: Int32, _ queue: Int32) -> Int32
    /// close(2).
    public var close: @Sendable (_ fd: Int32) -> Int32
    /// Monotonic clock in nanoseconds (for retry deadlines).
    public var monotonicNanoseconds: @Sendable () -> UInt64
    /// Sleeps the calling thread (only while opening a transport: the EBUSY retry).
    public var sleepNanoseconds: @Sendable (_ nanoseconds: UInt64) -> Void

    /// A set of calls (`.live` has the C library's; tests change single entries).
    public init(
        socket: @escaping @Sendable (Int32, Int32, Int32) -> Int32,
        bind: @escaping @Sendable (Int32, UnsafeRawPointer, socklen_t) -> Int32,
        connect: @escaping @Sendable (Int32, UnsafeRawPointer, socklen_t) -> Int32,
        open: @escaping @Sendable (UnsafePointer<CChar>, Int32, mode_t) -> Int32,
        read: @escaping @Sendable (Int32, UnsafeMutableRawPointer, Int) -> Int,
        write: @escaping @Sendable (Int32, UnsafeRawPointer, Int) -> Int,
        send: @escaping @Sendable (Int32, UnsafeRawPointer, Int, Int32) -> Int,
        ioctl: @escaping @Sendable (Int32, UInt, Int) -> Int32,
        setsockopt: @escaping @Sendable (Int32, Int32, Int32, UnsafeRawPointer, socklen_t) -> Int32,
        getsockopt: @escaping @Sendable (Int32, Int32, Int32, UnsafeMutableRawPointer, UnsafeMutablePointer<socklen_t>) -> Int32,
        poll: @escaping @Sendable (UnsafeMutablePointer<pollfd>, nfds_t, Int32) -> Int32,
        tcgetattr: @escaping @Sendable (Int32, UnsafeMutablePointer<termios>) -> Int32,
        tcsetattr: @escaping @Sendable (Int32, Int32, UnsafePointer<termios>) -> Int32,
        tcflush: @escaping @Sendable (Int32, Int32) -> Int32,
        close: @escaping @Sendable (Int32) -> Int32,
        monotonicNanoseconds: @escaping @Sendable () -> UInt64,
        sleepNanoseconds: @escaping @Sendable (UInt64) -> Void
    ) {
        self.socket = socket
        self.bind = bind
        self.connect = connect
        self.open = open
        self.read = read
        self.write = write
        self.send = send
        self.ioctl = ioctl
        self.setsockopt = setsockopt
        self.getsockopt = getsockopt
        self.poll = poll
        self.tcgetattr = tcgetattr
        self.tcsetattr = tcsetattr
        self.tcflush = tcflush
        self.close = close
        self.monotonicNanoseconds = monotonicNanoseconds
        self.sleepNanoseconds = sleepNanoseconds
    }

    /// The real system calls.
    public static let live = SystemCalls(
        socket: { Glibc.socket($0, $1, $2) },
        bind: { Glibc.bind($0, $1.assumingMemoryBound(to: sockaddr.self), $2) },
        connect: { Glibc.connect($0, $1.assumingMemoryBound(to: sockaddr.self), $2) },
        open: { Glibc.open($0, $1, $2) },
        read: { Glibc.read($0, $1, $2) },
        write: { Glibc.write($0, $1, $2) },
        send: { Glibc.send($0, $1, $2, $3) },
        ioctl: { cbluetooth_ioctl($0, $1, $2) },
        setsockopt: { Glibc.setsockopt($0, $1, $2, $3, $4) },
        getsockopt: { Glibc.getsockopt($0, $1, $2, $3, $4) },
        poll: { Glibc.poll($0, $1, $2) },
        tcgetattr: { Glibc.tcgetattr($0, $1) },
        tcsetattr: { Glibc.tcsetattr($0, $1, $2) },
        tcflush: { Glibc.tcflush($0, $1) },
        close: { Glibc.close($0) },
        monotonicNanoseconds: { monotonicNow() },
        sleepNanoseconds: { ns in
            var request = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
            var remaining = timespec()
            while nanosleep(&request, &remaining) == -1 && Glibc.errno == EINTR { request = remaining }
        }
    )
}

// MARK: - Helpers shared by the transports

extension SystemCalls {
    /// Runs `body`, retried on EINTR (``retryingOnInterrupt(_:)``) unless told not to.
    /// Returns the value, or the errno of the failure. Never use it for `close`.
    @inline(__always)
    func valueOrErrno<I: FixedWidthInteger>(retryOnInterrupt: Bool = true, _ body: () -> I) -> Result<I, Errno> {
        if retryOnInterrupt { return retryingOnInterrupt(body) }
        let r = body()
        return r >= 0 ? .success(r) : .failure(Errno.current)
    }

    /// Closes `fd` once. Never retried: on Linux the descriptor is released even when
    /// close reports EINTR, and retrying could close a descriptor another thread opened.
    func closeOnce(_ fd: Int32) {
        _ = close(fd)
    }

    /// Waits until `fd` has one of `events` or `timeoutMilliseconds` passes.
    /// Returns the revents (0 on timeout).
    func waitFor(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) -> Result<Int16, Errno> {
        let deadline = monotonicNanoseconds() &+ UInt64(max(timeoutMilliseconds, 0)) &* 1_000_000
        var remaining = timeoutMilliseconds
        while true {
            var p = pollfd(fd: fd, events: events, revents: 0)
            let r = poll(&p, 1, remaining)
            if r > 0 { return .success(p.revents) }
            if r == 0 { return .success(0) }
            let e = Errno.current
            guard e == .interrupted else { return .failure(e) }
            let now = monotonicNanoseconds()
            if now >= deadline { return .success(0) }
            remaining = Int32(clamping: (deadline - now + 999_999) / 1_000_000)
        }
    }

    /// Why `writeAll` stopped.
    enum WriteFailure: Error {
        case errno(Errno)
        /// The descriptor stayed unwritable for the whole timeout.
        case timedOut
    }

    /// Writes every byte of `bytes` to `fd`, continuing over partial writes. On a
    /// non-blocking descriptor that is full (EAGAIN) it waits with poll(POLLOUT) for at
    /// most `timeoutMilliseconds` per wait, then fails with `.timedOut`.
    /// `useSend` writes with send(MSG_NOSIGNAL) so a closed TCP peer gives EPIPE
    /// instead of killing the process with SIGPIPE.
    func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, useSend: Bool = false, timeoutMilliseconds: Int32) -> Result<Void, WriteFailure> {
        guard let base = bytes.baseAddress else { return .success(()) }
        var done = 0
        while done < bytes.count {
            let r = valueOrErrno {
                useSend
                    ? send(fd, base + done, bytes.count - done, Int32(MSG_NOSIGNAL))
                    : write(fd, base + done, bytes.count - done)
            }
            switch r {
            case .success(let n):
                done += n
            case .failure(let e) where e == .wouldBlock:
                switch waitFor(fd, events: Int16(POLLOUT), timeoutMilliseconds: timeoutMilliseconds) {
                case .success(0): return .failure(.timedOut)
                case .success: continue
                case .failure(let e): return .failure(.errno(e))
                }
            case .failure(let e):
                return .failure(.errno(e))
            }
        }
        return .success(())
    }
}
