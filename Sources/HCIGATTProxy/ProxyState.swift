// What the proxy keeps across restarts, in its state directory (0700, ours): its Noise key
// (`proxy.key`, Base64 as HA takes it) and its identity (`proxy.id`, the MAC-shaped id HA
// keys the device by, made once so a new dongle is still the same proxy in HA). Files are
// 0600, written whole (temporary, fsync, rename), never through a link.
import BluetoothCrypto
import BluetoothTransport
#if canImport(Glibc)
import Glibc
#endif

/// A state file that cannot be read or written, named.
public struct ProxyStateError: Error, Sendable, CustomStringConvertible {
    /// The file.
    public var path: String
    /// What is wrong with it.
    public var message: String
    public var description: String { "\(path): \(message)" }
}

/// The proxy's state directory: its key and its identity.
public struct ProxyState: Sendable {
    /// The directory (made 0700 when first written).
    public let directory: String
    /// The state in `directory`.
    public init(directory: String) { self.directory = directory }

    /// The key's file.
    public var keyPath: String { "\(directory)/proxy.key" }
    /// The identity's file.
    public var identityPath: String { "\(directory)/proxy.id" }

    /// The key in `path` (Base64 of 32 bytes, one line); nil when there is no such file.
    public static func readKey(_ path: String) throws(ProxyStateError) -> [UInt8]? {
        guard let text = try read(path) else { return nil }
        let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).first.map(String.init) ?? ""
        guard let key = Base64.decode(line.trimmingSpaces), key.count == 32 else {
            throw ProxyStateError(path: path, message: "not a key: expected the Base64 of 32 bytes (44 characters) on one line")
        }
        return key
    }

    /// The stored key, or a new one made, written and returned with `created`.
    public func keyOrNew() throws(ProxyStateError) -> (key: [UInt8], created: Bool) {
        if let k = try Self.readKey(keyPath) { return (k, false) }
        let key = BluetoothCrypto.randomBytes(32)
        try write(Base64.encode(key) + "\n", to: keyPath)
        return (key, true)
    }

    /// Replaces the stored key (HA's set-key request); nil removes it.
    public func replaceKey(_ key: [UInt8]?, at path: String? = nil) throws(ProxyStateError) {
        let p = path ?? keyPath
        guard let key else {
            if unlink(p) != 0, errno != ENOENT { throw ProxyStateError(path: p, message: "cannot remove: \(String(cString: strerror(errno)))") }
            return
        }
        try write(Base64.encode(key) + "\n", to: p)
    }

    /// The proxy's identity ("AA:BB:CC:DD:EE:FF"): read, or made once (a random, locally
    /// administered unicast address, so it never names a real device).
    public func identity() throws(ProxyStateError) -> String {
        if let text = try Self.read(identityPath) {
            let id = text.trimmingSpaces
            guard Self.isMAC(id) else { throw ProxyStateError(path: identityPath, message: "not an identity: expected AA:BB:CC:DD:EE:FF") }
            return id.uppercased()
        }
        var b = BluetoothCrypto.randomBytes(6)
        b[0] = (b[0] & 0xFC) | 0x02
        let id = b.map { ($0 < 16 ? "0" : "") + String($0, radix: 16, uppercase: true) }.joined(separator: ":")
        try write(id + "\n", to: identityPath)
        return id
    }

    static func isMAC(_ s: String) -> Bool {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.utf8.count == 2 && UInt8($0, radix: 16) != nil }
    }

    // MARK: Files

    /// A small text file (4 KiB at most), nil when there is none.
    public static func readText(_ path: String) throws(ProxyStateError) -> String? { try read(path) }

    static func read(_ path: String) throws(ProxyStateError) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw ProxyStateError(path: path, message: "cannot read: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while bytes.count <= 4096 {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw ProxyStateError(path: path, message: "cannot read: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += buffer[..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    func prepareDirectory() throws(ProxyStateError) {
        var path = directory.hasPrefix("/") ? "" : "."
        for part in directory.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0, errno != EEXIST {
                throw ProxyStateError(path: path, message: "cannot create the state directory: \(String(cString: strerror(errno)))")
            }
        }
        if let problem = privateDirectoryProblem(directory) { throw ProxyStateError(path: directory, message: problem) }
    }

    /// Writes `text` to `final` whole: a crash leaves the old file or the new one.
    func write(_ text: String, to final: String) throws(ProxyStateError) {
        if final.hasPrefix(directory + "/") { try prepareDirectory() }
        let dir = final.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let temporary = "\(dir.isEmpty ? "." : dir)/.proxy-\(getpid())-\(UInt32.random(in: 0 ... .max)).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ProxyStateError(path: temporary, message: "cannot create: \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                let e = String(cString: strerror(errno))
                close(fd)
                unlink(temporary)
                throw ProxyStateError(path: temporary, message: "cannot write: \(e)")
            }
            written += n
        }
        let synced = fsync(fd) == 0
        let closed = close(fd) == 0
        guard synced, closed, rename(temporary, final) == 0 else {
            let e = String(cString: strerror(errno))
            unlink(temporary)
            throw ProxyStateError(path: final, message: "cannot replace: \(e)")
        }
        let dfd = open(dir.isEmpty ? "." : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }
}

extension String {
    var trimmingSpaces: String {
        let u = Array(utf8)
        var a = 0, b = u.count
        while a < b, u[a] == 0x20 || u[a] == 0x09 || u[a] == 0x0A || u[a] == 0x0D { a += 1 }
        while b > a, u[b - 1] == 0x20 || u[b - 1] == 0x09 || u[b - 1] == 0x0A || u[b - 1] == 0x0D { b -= 1 }
        return String(decoding: u[a ..< b], as: UTF8.self)
    }
}
