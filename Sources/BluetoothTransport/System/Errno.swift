import Glibc

/// A POSIX error number. An open set (like swift-system's `Errno`): any value the
/// kernel returns can be represented; the common ones have names.
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int32
    @inlinable public init(rawValue: Int32) { self.rawValue = rawValue }
    /// The errno value `rawValue`.
    @inlinable public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno`.
    @inlinable public static var current: Errno {
        get { Errno(Glibc.errno) }
        set { Glibc.errno = newValue.rawValue }
    }

    /// EPERM: Operation not permitted.
    public static let permissionDenied = Errno(EPERM)
    /// ENOENT: No such file or directory.
    public static let noSuchFile = Errno(ENOENT)
    /// EINTR: Interrupted system call.
    public static let interrupted = Errno(EINTR)
    /// EIO: I/O error.
    public static let ioError = Errno(EIO)
    /// EBADF: Bad file descriptor.
    public static let badFileDescriptor = Errno(EBADF)
    /// EAGAIN: Try again (non-blocking descriptor not ready).
    public static let wouldBlock = Errno(EAGAIN)
    /// EACCES: Permission denied.
    public static let accessDenied = Errno(EACCES)
    /// EBUSY: Device or resource busy.
    public static let busy = Errno(EBUSY)
    /// ENODEV: No such device.
    public static let noSuchDevice = Errno(ENODEV)
    /// EINVAL: Invalid argument.
    public static let invalidArgument = Errno(EINVAL)
    /// ENOTTY: Not a terminal (inappropriate ioctl).
    public static let notATerminal = Errno(ENOTTY)
    /// EPIPE: Broken pipe.
    public static let brokenPipe = Errno(EPIPE)
    /// EPROTONOSUPPORT: Protocol not supported (no Bluetooth in the kernel).
    public static let protocolNotSupported = Errno(EPROTONOSUPPORT)
    /// EOPNOTSUPP: Operation not supported.
    public static let operationNotSupported = Errno(EOPNOTSUPP)
    /// EAFNOSUPPORT: Address family not supported (no AF_BLUETOOTH).
    public static let addressFamilyNotSupported = Errno(EAFNOSUPPORT)
    /// ENETDOWN: Network is down (the adapter is down).
    public static let networkDown = Errno(ENETDOWN)
    /// ECONNRESET: Connection reset by peer.
    public static let connectionReset = Errno(ECONNRESET)
    /// ETIMEDOUT: Connection timed out.
    public static let timedOut = Errno(ETIMEDOUT)
    /// ECONNREFUSED: Connection refused.
    public static let connectionRefused = Errno(ECONNREFUSED)
    /// EHOSTUNREACH: No route to host.
    public static let hostUnreachable = Errno(EHOSTUNREACH)
    /// ENETUNREACH: Network is unreachable.
    public static let networkUnreachable = Errno(ENETUNREACH)
    /// EALREADY: Operation already in progress.
    public static let alreadyInProgress = Errno(EALREADY)
    /// EINPROGRESS: Operation now in progress.
    public static let inProgress = Errno(EINPROGRESS)
    /// EUSERS: Too many users (the user channel is taken).
    public static let tooManyUsers = Errno(EUSERS)
    /// ERFKILL: Blocked by rfkill.
    public static let rfkill = Errno(ERFKILL)

    /// The symbolic name, e.g. "EBUSY", or nil for a number without a name here.
    public var name: String? {
        switch rawValue {
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case EINTR: "EINTR"
        case EIO: "EIO"
        case ENXIO: "ENXIO"
        case EBADF: "EBADF"
        case EAGAIN: "EAGAIN"
        case ENOMEM: "ENOMEM"
        case EACCES: "EACCES"
        case EFAULT: "EFAULT"
        case EBUSY: "EBUSY"
        case EEXIST: "EEXIST"
        case ENODEV: "ENODEV"
        case EINVAL: "EINVAL"
        case ENOTTY: "ENOTTY"
        case ENOSPC: "ENOSPC"
        case EPIPE: "EPIPE"
        case EUSERS: "EUSERS"
        case EPROTONOSUPPORT: "EPROTONOSUPPORT"
        case EOPNOTSUPP: "EOPNOTSUPP"
        case EAFNOSUPPORT: "EAFNOSUPPORT"
        case EADDRINUSE: "EADDRINUSE"
        case ENETDOWN: "ENETDOWN"
        case ENETUNREACH: "ENETUNREACH"
        case ECONNRESET: "ECONNRESET"
        case ENOTCONN: "ENOTCONN"
        case ETIMEDOUT: "ETIMEDOUT"
        case ECONNREFUSED: "ECONNREFUSED"
        case EHOSTUNREACH: "EHOSTUNREACH"
        case EALREADY: "EALREADY"
        case EINPROGRESS: "EINPROGRESS"
        case ERFKILL: "ERFKILL"
        default: nil
        }
    }

    /// The C library's text for this error, e.g. "Device or resource busy".
    public var message: String {
        guard let p = strerror(rawValue) else { return "error \(rawValue)" }
        return String(cString: p)
    }

    /// "Device or resource busy (EBUSY)".
    public var description: String { "\(message) (\(name ?? "errno \(rawValue)"))" }
}

/// Runs `body` (a system call returning -1 on failure) until it does not fail with EINTR:
/// its result, or the errno. The one EINTR loop of the whole stack.
@inlinable @inline(__always)
public func retryingOnInterrupt<I: FixedWidthInteger>(_ body: () -> I) -> Result<I, Errno> {
    while true {
        let r = body()
        if r >= 0 { return .success(r) }
        let e = Errno.current
        if e != .interrupted { return .failure(e) }
    }
}
