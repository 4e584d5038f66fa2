import BluetoothSecurity
import BluetoothTransport
import BluetoothWire
import Glibc

/// What is kept about a bonded peer: its identity, the keys, how they were made.
public struct Bond: Sendable, Hashable {
    /// The peer's identity address (its public or static random address, or the one it
    /// distributed with its IRK).
    public var identity: LEAddress
    /// Made with LE Secure Connections.
    public var secureConnections: Bool
    /// Made with MITM protection (passkey or numeric comparison).
    public var authenticated: Bool
    /// Encryption key size in bytes (7-16).
    public var keySize: UInt8
    /// The key that encrypts the link when we are central (SC: the derived LTK).
    public var peerLTK: SMPLongTermKey?
    /// Legacy pairing: the key we distributed, for when we are peripheral.
    public var localLTK: SMPLongTermKey?
    /// The peer's Identity Resolving Key: resolves its private addresses.
    public var peerIRK: UInt128?
    /// The peer's signature key: verifies its signed writes.
    public var peerCSRK: UInt128?
    /// Our signature key: signs our signed writes to the peer.
    public var localCSRK: UInt128?
    /// Seconds since 1970 when the bond was made.
    public var created: Int64

    /// The bond a pairing made with `identity` (or the identity the peer distributed).
    public init(identity: LEAddress, result r: SMPPairingResult, created: Int64) {
        self.identity = r.peerIdentityAddress ?? identity
        secureConnections = r.secureConnections
        authenticated = r.authenticated
        keySize = r.keySize
        peerLTK = r.peerLTK
        localLTK = r.localLTK
        peerIRK = r.peerIdentityResolvingKey
        peerCSRK = r.peerSignatureKey
        localCSRK = r.localSignatureKey
        self.created = created
    }

    /// The key for encrypting as central.
    public var centralKey: SMPLongTermKey? { peerLTK }

    /// The key for a peripheral's LE Long Term Key Request with this EDIV and Rand.
    public func peripheralKey(ediv: UInt16, rand: UInt64) -> UInt128? {
        if secureConnections { return ediv == 0 && rand == 0 ? peerLTK?.key : nil }
        if let l = localLTK, l.ediv == ediv, l.rand == rand { return l.key }
        return nil
    }
}

/// A bond file that cannot be used: which, where and why (it is left as it is).
public struct BondStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file.
    public var path: String
    /// What is wrong with it.
    public var message: String
    public var description: String { "\(path): \(message)" }

    /// An error about `path`.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
}

/// Bonds on disk, one file per peer identity address in a directory made 0700
/// (`/var/lib/hcigatt/bonds` by default), each file 0600, written atomically (temporary file,
/// fsync, rename, fsync of the directory) so a crash leaves the old bond or the new one,
/// never half of either. A file that cannot be read or parsed is reported with its path and
/// never dropped or overwritten silently.
public final class BondStore: Sendable {
    /// Where the bond files are.
    public let directory: String

    /// Where bonds are kept unless told otherwise.
    public static let defaultDirectory = "/var/lib/hcigatt/bonds"

    /// A store in `directory` (made, 0700, on the first save).
    public init(directory: String) {
        self.directory = directory
    }

    /// The file of a peer: "F0F1F2F3F401-public.bond".
    public func path(for identity: LEAddress) -> String { path(for: identity, kind: "bond") }

    /// A file kept beside the bond, named like it with another extension
    /// ("F0F1F2F3F401-public.gatt-server"): what the GATT layers remember about the peer.
    public func path(for identity: LEAddress, kind: String) -> String {
        "\(directory)/\(Self.stem(identity)).\(kind)"
    }

    static func stem(_ identity: LEAddress) -> String {
        let a = identity.address.rawValue
        let hexAddress = (0 ..< 6).map { hex(UInt8(truncatingIfNeeded: a >> (8 * (5 - UInt64($0)))), 2) }.joined()
        let kind = identity.type == .public || identity.type == .publicIdentity ? "public" : "random"
        return "\(hexAddress)-\(kind)"
    }

    /// The peer a file name ("F0F1F2F3F401-public.<kind>") belongs to.
    static func identity(fromFileName name: String, kind: String) -> LEAddress? {
        let u = Array(name.utf8)
        let suffix = Array(".\(kind)".utf8)
        guard u.count == 19 + suffix.count, u.suffix(suffix.count).elementsEqual(suffix), u[12] == UInt8(ascii: "-"),
              let raw = UInt64(String(decoding: u[0 ..< 12], as: UTF8.self), radix: 16) else { return nil }
        switch String(decoding: u[13 ..< 19], as: UTF8.self) {
        case "public": return LEAddress(BluetoothAddress(rawValue: raw), type: .public)
        case "random": return LEAddress(BluetoothAddress(rawValue: raw), type: .random)
        default: return nil
        }
    }

    /// The peers that have a file of `kind`.
    public func identities(kind: String) -> [LEAddress] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var out: [LEAddress] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { p in
                p.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if let id = Self.identity(fromFileName: name, kind: kind) { out.append(id) }
        }
        return out.sorted { $0.address.rawValue < $1.address.rawValue }
    }

    /// The bytes of the peer's file of `kind`; nil when there is none (ENOENT only: a file
    /// or directory that cannot be reached, EACCES or ENOTDIR, is an error naming it).
    public func read(_ identity: LEAddress, kind: String) throws(BondStoreError) -> [UInt8]? {
        try checkDirectory()
        return try readBytes(path: path(for: identity, kind: kind), missing: .absent)
    }

    /// The directory is ours and only ours to write (else its files could be planted):
    /// an error naming it and its mode otherwise.
    func checkDirectory() throws(BondStoreError) {
        if let problem = privateDirectoryProblem(directory) { throw BondStoreError(path: directory, message: problem) }
    }

    /// This host's Identity Resolving Key (privacy, Core Vol 3 Part C §10.7): what its
    /// resolvable private addresses are made with and what it distributes when bonding, so
    /// bonded peers recognise it behind them. Made at random on first use and kept in
    /// `local.irk` (0600) beside the bonds; unpairing does not touch it.
    public func localIdentityResolvingKey() throws(BondStoreError) -> UInt128 {
        let p = "\(directory)/local.irk"
        try checkDirectory()
        if let bytes = try readBytes(path: p, missing: .absent) {
            let text = String(decoding: bytes, as: UTF8.self)
            for line in text.split(separator: "\n") where line.hasPrefix("irk=") {
                let v = line.dropFirst(4)
                guard v.utf8.count == 32, let k = UInt128(v, radix: 16), k != 0 else { break }
                return k
            }
            throw BondStoreError(path: p, message: "no irk=<32 hex digits> (remove the file to make a new key; bonded peers then no longer recognise this host)")
        }
        var g = SystemRandomNumberGenerator()
        let k = UInt128(g.next() as UInt64) << 64 | UInt128(g.next() as UInt64)
        let s = String(k, radix: 16)
        try prepareDirectory()
        try writeAtomically(Array("# hcigatt: this host's Identity Resolving Key (keep it private)\nirk=\(String(repeating: "0", count: 32 - s.utf8.count) + s)\n".utf8), to: p)
        return k
    }

    /// Whether a file of `kind` is kept for `identity` (read or not); a path that cannot
    /// be looked at (EACCES, ENOTDIR) is an error, not absence.
    public func contains(_ identity: LEAddress, kind: String) throws(BondStoreError) -> Bool {
        let p = path(for: identity, kind: kind)
        var st = stat()
        if stat(p, &st) == 0 { return true }
        if errno == ENOENT { return false }
        throw BondStoreError(path: p, message: "cannot look at it: \(String(cString: strerror(errno)))")
    }

    /// Removes the peer's file of `kind` (none is fine).
    public func remove(_ identity: LEAddress, kind: String) throws(BondStoreError) {
        let p = path(for: identity, kind: kind)
        if unlink(p) != 0 && errno != ENOENT { throw BondStoreError(path: p, message: "cannot remove: \(String(cString: strerror(errno)))") }
    }

    /// Replaces the peer's file of `kind` atomically (0600, in the 0700 directory).
    public func write(_ text: String, for identity: LEAddress, kind: String) throws(BondStoreError) {
        try prepareDirectory()
        try writeAtomically(Array(text.utf8), to: path(for: identity, kind: kind))
    }

    // MARK: Reading

    /// Every bond; a file that cannot be parsed is an error naming it.
    public func all() throws(BondStoreError) -> [Bond] {
        try checkDirectory()
        guard let dir = opendir(directory) else {
            if errno == ENOENT { return [] }
            throw BondStoreError(path: directory, message: "cannot read the bond directory: \(String(cString: strerror(errno)))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { p in
                p.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name.hasSuffix(".bond"), !name.hasPrefix(".") { names.append(name) }
        }
        var bonds: [Bond] = []
        for name in names.sorted() { bonds.append(try read(path: "\(directory)/\(name)")) }
        return bonds
    }

    /// Why `directory` cannot be listed ("No such file or directory", "Permission
    /// denied"), or nil when it can.
    public static func unreadable(_ directory: String) -> String? {
        guard let dir = opendir(directory) else { return String(cString: strerror(errno)) }
        closedir(dir)
        return nil
    }

    /// The IRKs of the bonds that have one, for resolving the peers' private addresses.
    /// Files that cannot be read are left out here; using them by address reports them.
    public func resolvingEntries() -> [AddressResolver.Entry] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var entries: [AddressResolver.Entry] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { p in
                p.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            guard name.hasSuffix(".bond"), !name.hasPrefix("."), let b = try? read(path: "\(directory)/\(name)"),
                  let irk = b.peerIRK, irk != 0 else { continue }  // all zeros: no privacy, nothing to resolve
            entries.append(AddressResolver.Entry(irk: irk, identity: b.identity))
        }
        return entries
    }

    /// The bond of `identity`, nil when there is none. Only a file that does not exist
    /// (ENOENT) is no bond: one that cannot be read (EACCES, ENOTDIR, EIO) or parsed is an
    /// error naming it, so a caller never goes on as if the peer were not bonded.
    public func bond(for identity: LEAddress) throws(BondStoreError) -> Bond? {
        let p = path(for: identity)
        try checkDirectory()
        guard let bytes = try readBytes(path: p, missing: .absent) else { return nil }
        return try Self.parse(bytes, path: p)
    }

    /// The identities bonded at `address`, of either type (a user who names an address
    /// without its type means whichever is bonded; both can be, rarely). A file that is
    /// there but cannot be read is an error naming it.
    public func identities(at address: BluetoothAddress) throws(BondStoreError) -> [LEAddress] {
        var found: [LEAddress] = []
        for type in [LEAddressType.public, .random] {
            let identity = LEAddress(address, type: type)
            if try bond(for: identity) != nil { found.append(identity) }
        }
        return found
    }

    func read(path: String) throws(BondStoreError) -> Bond {
        try Self.parse(readBytes(path: path), path: path)
    }

    /// What a file that does not exist means to the caller.
    enum Missing { case absent, error }

    func readBytes(path: String) throws(BondStoreError) -> [UInt8] {
        // Never nil with .error.
        try readBytes(path: path, missing: .error) ?? []
    }

    /// The file's bytes; nil when it does not exist (ENOENT) and `missing` is `.absent`.
    func readBytes(path: String, missing: Missing) throws(BondStoreError) -> [UInt8]? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT, missing == .absent { return nil }
            throw BondStoreError(path: path, message: "cannot open: \(String(cString: strerror(errno)))")
        }
        defer { Glibc.close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, 4096) }
            if n < 0 {
                if errno == EINTR { continue }
                throw BondStoreError(path: path, message: "cannot read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += buffer[0 ..< n]
            if bytes.count > 1 << 20 { throw BondStoreError(path: path, message: "larger than any file of a bond (1 MiB)") }
        }
        return bytes
    }

    /// `key=value` lines; `#` comments. Unknown keys are kept out (a newer version may add some).
    static func parse(_ bytes: [UInt8], path: String) throws(BondStoreError) -> Bond {
        var fields: [String: String] = [:]
        for (i, raw) in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw[...]
            if line.isEmpty || line.first == "#" { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw BondStoreError(path: path, message: "line \(i + 1): expected key=value")
            }
            fields[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        func need(_ k: String) throws(BondStoreError) -> String {
            guard let v = fields[k] else { throw BondStoreError(path: path, message: "no \(k)=") }
            return v
        }
        func key(_ k: String) throws(BondStoreError) -> UInt128? {
            guard let v = fields[k] else { return nil }
            guard v.utf8.count == 32, let n = UInt128(v, radix: 16) else { throw BondStoreError(path: path, message: "\(k) is not 32 hex digits") }
            return n
        }
        func number<T: FixedWidthInteger>(_ k: String, _ t: T.Type) throws(BondStoreError) -> T? {
            guard let v = fields[k] else { return nil }
            guard let n = T(v) else { throw BondStoreError(path: path, message: "\(k)=\(v) is not a number") }
            return n
        }
        guard try need("version") == "1" else { throw BondStoreError(path: path, message: "unknown version \(fields["version"] ?? "")") }
        let idText = try need("identity")
        guard let identity = Self.address(idText) else { throw BondStoreError(path: path, message: "identity=\(idText) is not AA:BB:CC:DD:EE:FF/public|random") }
        var r = SMPPairingResult(method: .justWorks, secureConnections: try need("secure_connections") == "1",
                                 authenticated: try need("authenticated") == "1",
                                 keySize: try number("key_size", UInt8.self) ?? 16, bonded: true)
        guard (7 ... 16).contains(r.keySize) else { throw BondStoreError(path: path, message: "key_size=\(r.keySize) is outside 7...16") }
        if let k = try key("ltk") {
            r.peerLTK = SMPLongTermKey(key: k, ediv: try number("ltk_ediv", UInt16.self) ?? 0, rand: try number("ltk_rand", UInt64.self) ?? 0)
        }
        if let k = try key("local_ltk") {
            r.localLTK = SMPLongTermKey(key: k, ediv: try number("local_ediv", UInt16.self) ?? 0, rand: try number("local_rand", UInt64.self) ?? 0)
        }
        r.peerIdentityResolvingKey = try key("irk")
        r.peerSignatureKey = try key("csrk")
        r.localSignatureKey = try key("local_csrk")
        r.peerIdentityAddress = identity
        guard r.peerLTK != nil || r.localLTK != nil else { throw BondStoreError(path: path, message: "no key (ltk= or local_ltk=)") }
        return Bond(identity: identity, result: r, created: try number("created", Int64.self) ?? 0)
    }

    static func address(_ text: String) -> LEAddress? {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let a = BluetoothAddress(parts[0]) else { return nil }
        switch parts[1] {
        case "public": return LEAddress(a, type: .public)
        case "random": return LEAddress(a, type: .random)
        default: return nil
        }
    }

    static func text(_ a: LEAddress) -> String {
        "\(a.address)/\(a.type == .public || a.type == .publicIdentity ? "public" : "random")"
    }

    static func render(_ b: Bond) -> String {
        func k(_ v: UInt128) -> String {
            let s = String(v, radix: 16)
            return String(repeating: "0", count: 32 - s.utf8.count) + s
        }
        var lines = ["# hcigatt bond (keys: keep this file private)", "version=1", "identity=\(text(b.identity))",
                     "secure_connections=\(b.secureConnections ? 1 : 0)", "authenticated=\(b.authenticated ? 1 : 0)",
                     "key_size=\(b.keySize)", "created=\(b.created)"]
        if let l = b.peerLTK { lines += ["ltk=\(k(l.key))", "ltk_ediv=\(l.ediv)", "ltk_rand=\(l.rand)"] }
        if let l = b.localLTK { lines += ["local_ltk=\(k(l.key))", "local_ediv=\(l.ediv)", "local_rand=\(l.rand)"] }
        if let v = b.peerIRK { lines.append("irk=\(k(v))") }
        if let v = b.peerCSRK { lines.append("csrk=\(k(v))") }
        if let v = b.localCSRK { lines.append("local_csrk=\(k(v))") }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Writing

    /// Creates the directory (0700) when missing.
    func prepareDirectory() throws(BondStoreError) {
        var path = directory.hasPrefix("/") ? "" : "."
        for part in directory.split(separator: "/") {
            path += "/" + part
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw BondStoreError(path: path, message: "cannot create the bond directory: \(String(cString: strerror(errno)))")
            }
        }
        try checkDirectory()
    }

    /// Stores `bond` (replacing the peer's previous one) atomically.
    public func save(_ bond: Bond) throws(BondStoreError) {
        guard bond.peerLTK != nil || bond.localLTK != nil else {
            throw BondStoreError(path: path(for: bond.identity), message: "the pairing distributed no key to keep (no LTK): nothing to bond with")
        }
        try prepareDirectory()
        try writeAtomically(Array(Self.render(bond).utf8), to: path(for: bond.identity))
    }

    /// Stores `bond` unless the peer's stored one is stronger (authenticated, Secure
    /// Connections, a longer key): a weaker pairing, however it came about (an impostor
    /// refusing our key so we pair again), never replaces it; `unpair` first to do that.
    /// A new bond's SignCounters start over (its CSRKs are new).
    public func saveUnlessWeaker(_ bond: Bond) throws(BondStoreError) {
        // An unreadable file is not "no bond": it stays, and the error names it.
        if let old = try self.bond(for: bond.identity),
           (old.authenticated && !bond.authenticated) || (old.secureConnections && !bond.secureConnections) || bond.keySize < old.keySize {
            throw BondStoreError(path: path(for: bond.identity),
                                 message: "kept: the stored bond is stronger (\(old.authenticated ? "authenticated" : "unauthenticated"), \(old.secureConnections ? "Secure Connections" : "legacy"), \(old.keySize)-byte key) than this pairing; hcigatt unpair first to replace it")
        }
        try save(bond)
        try remove(bond.identity, kind: "sign-counters")
    }

    /// Temporary file (0600), write, fsync, rename over `final`, fsync of the directory:
    /// a crash leaves the old file or the new one.
    func writeAtomically(_ bytes: [UInt8], to final: String) throws(BondStoreError) {
        let temporary = "\(directory)/.\(getpid())-\(UInt32.random(in: 0 ... .max)).tmp"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BondStoreError(path: temporary, message: "cannot create: \(String(cString: strerror(errno)))") }
        var written = 0
        var failure: String?
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                failure = "cannot write: \(String(cString: strerror(errno)))"
                break
            }
            written += n
        }
        if failure == nil, fsync(fd) != 0 { failure = "fsync failed: \(String(cString: strerror(errno)))" }
        Glibc.close(fd)
        if let failure {
            unlink(temporary)
            throw BondStoreError(path: temporary, message: failure)
        }
        guard rename(temporary, final) == 0 else {
            let e = String(cString: strerror(errno))
            unlink(temporary)
            throw BondStoreError(path: final, message: "cannot replace: \(e)")
        }
        let dfd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            Glibc.close(dfd)
        }
    }

    /// Forgets the peer's bond; false when there was none.
    @discardableResult
    public func remove(_ identity: LEAddress) throws(BondStoreError) -> Bool {
        // What the GATT layers kept about the peer goes with the bond.
        for kind in Self.companionKinds {
            let c = path(for: identity, kind: kind)
            if unlink(c) != 0 && errno != ENOENT {
                throw BondStoreError(path: c, message: "cannot remove: \(String(cString: strerror(errno)))")
            }
        }
        let p = path(for: identity)
        if unlink(p) == 0 { return true }
        if errno == ENOENT { return false }
        throw BondStoreError(path: p, message: "cannot remove: \(String(cString: strerror(errno)))")
    }

    /// Files kept beside a bond (``write(_:for:kind:)``): the GATT server's record of the
    /// client's configuration, the GATT client's cache of the peer's database, the
    /// SignCounters of signed writes.
    public static let companionKinds = ["gatt-server", "gatt-cache", "sign-counters"]
}
