/// The Security Manager's cryptographic toolbox (Core Vol 3 Part H §2.2), on AES-128 and
/// AES-CMAC from BearSSL (`BluetoothCrypto`).
///
/// Byte order: every value is written as the specification prints it, most significant
/// octet first (`u = 20b003d2 ...` is `[0x20, 0xb0, ...]`). SMP PDUs carry values least
/// significant octet first; the protocol layer reverses them at the wire.
public enum SecurityFunctions {
    public typealias Failure = BluetoothCrypto.Failure

    /// SALT of f5 (§2.2.7).
    static let f5Salt: [UInt8] = [0x6C, 0x88, 0x83, 0x91, 0xAA, 0xF5, 0xA5, 0x38, 0x60, 0x37, 0x0B, 0xDB, 0x5A, 0x60, 0x83, 0xBE]
    /// keyID "btle" of f5.
    static let f5KeyID: [UInt8] = [0x62, 0x74, 0x6C, 0x65]

    /// e: AES-128 of `plaintext` under `key` (§2.2.1).
    public static func e(_ key: [UInt8], _ plaintext: [UInt8]) throws(Failure) -> [UInt8] {
        try BluetoothCrypto.aes128(key: key, block: plaintext)
    }

    /// c1, the LE legacy pairing confirm value (§2.2.3): `r` 128 bits, `preq`/`pres` the
    /// 7-octet Pairing Request/Response PDUs as sent (opcode first), `iat`/`rat` the initiating
    /// and responding address types (0 public, 1 random), `ia`/`ra` the 48-bit addresses.
    public static func c1(k: [UInt8], r: [UInt8], preq: [UInt8], pres: [UInt8],
                          iat: UInt8, ia: [UInt8], rat: UInt8, ra: [UInt8]) throws(Failure) -> [UInt8] {
        precondition(r.count == 16 && preq.count == 7 && pres.count == 7 && ia.count == 6 && ra.count == 6)
        // p1 = pres || preq || rat' || iat', written most significant first: the PDUs are
        // sent opcode first, so as numbers they read reversed.
        let p1: [UInt8] = pres.reversed() + preq.reversed() + [rat & 1, iat & 1]
        let p2: [UInt8] = [0, 0, 0, 0] + ia + ra
        let first = try e(k, xor(r, p1))
        return try e(k, xor(first, p2))
    }

    /// s1, the LE legacy Short Term Key (§2.2.4): the least significant 64 bits of r1, then of r2.
    public static func s1(k: [UInt8], r1: [UInt8], r2: [UInt8]) throws(Failure) -> [UInt8] {
        precondition(r1.count == 16 && r2.count == 16)
        return try e(k, Array(r1[8...]) + Array(r2[8...]))
    }

    /// f4, the LE Secure Connections confirm value (§2.2.6): AES-CMAC_X(U || V || Z).
    public static func f4(u: [UInt8], v: [UInt8], x: [UInt8], z: UInt8) throws(Failure) -> [UInt8] {
        precondition(u.count == 32 && v.count == 32 && x.count == 16)
        return try BluetoothCrypto.aesCMAC(key: x, message: u + v + [z])
    }

    /// f5, the LE Secure Connections key generation (§2.2.7): MacKey and LTK from the
    /// DHKey `w`, the nonces and the 56-bit addresses `a1`/`a2` (type octet first).
    public static func f5(w: [UInt8], n1: [UInt8], n2: [UInt8], a1: [UInt8], a2: [UInt8]) throws(Failure) -> (macKey: [UInt8], ltk: [UInt8]) {
        precondition(w.count == 32 && n1.count == 16 && n2.count == 16 && a1.count == 7 && a2.count == 7)
        let t = try BluetoothCrypto.aesCMAC(key: f5Salt, message: w)
        let rest = f5KeyID + n1 + n2 + a1 + a2 + [0x01, 0x00]
        return (try BluetoothCrypto.aesCMAC(key: t, message: [0] + rest),
                try BluetoothCrypto.aesCMAC(key: t, message: [1] + rest))
    }

    /// f6, the LE Secure Connections check value (§2.2.8): AES-CMAC_W(N1 || N2 || R || IOcap || A1 || A2),
    /// `ioCap` = AuthReq, OOB data flag, IO capability (most significant first).
    public static func f6(w: [UInt8], n1: [UInt8], n2: [UInt8], r: [UInt8], ioCap: [UInt8],
                          a1: [UInt8], a2: [UInt8]) throws(Failure) -> [UInt8] {
        precondition(w.count == 16 && n1.count == 16 && n2.count == 16 && r.count == 16 && ioCap.count == 3
                     && a1.count == 7 && a2.count == 7)
        return try BluetoothCrypto.aesCMAC(key: w, message: n1 + n2 + r + ioCap + a1 + a2)
    }

    /// g2, the numeric comparison value (§2.2.9): AES-CMAC_X(U || V || Y) mod 2^32; the six
    /// digits shown are this mod 10^6.
    public static func g2(u: [UInt8], v: [UInt8], x: [UInt8], y: [UInt8]) throws(Failure) -> UInt32 {
        precondition(u.count == 32 && v.count == 32 && x.count == 16 && y.count == 16)
        let m = try BluetoothCrypto.aesCMAC(key: x, message: u + v + y)
        return m[12...].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// h6, link key conversion (§2.2.10): AES-CMAC_W(keyID).
    public static func h6(w: [UInt8], keyID: [UInt8]) throws(Failure) -> [UInt8] {
        precondition(w.count == 16 && keyID.count == 4)
        return try BluetoothCrypto.aesCMAC(key: w, message: keyID)
    }

    /// h7, link key conversion with a salt (§2.2.11, CT2): AES-CMAC_SALT(W).
    public static func h7(salt: [UInt8], w: [UInt8]) throws(Failure) -> [UInt8] {
        precondition(salt.count == 16 && w.count == 16)
        return try BluetoothCrypto.aesCMAC(key: salt, message: w)
    }

    /// ah, the random address hash (§2.2.2): e(k, 0...0 || r) mod 2^24, `r` the 24-bit prand.
    /// The Authentication Signature of a signed ATT PDU (Core Vol 3 Part H §2.4.5, Part C
    /// §10.4.1): AES-CMAC under the CSRK of the PDU followed by SignCounter, of which the
    /// most significant 64 bits are the MAC. `message` and the result are in wire order
    /// (least significant octet first): SignCounter (4) then MAC (8), as the PDU carries them.
    public static func signature(csrk: [UInt8], message: [UInt8], signCounter: UInt32) throws(Failure) -> [UInt8] {
        let counter = [UInt8(truncatingIfNeeded: signCounter), UInt8(truncatingIfNeeded: signCounter >> 8),
                       UInt8(truncatingIfNeeded: signCounter >> 16), UInt8(truncatingIfNeeded: signCounter >> 24)]
        let mac = try BluetoothCrypto.aesCMAC(key: csrk, message: Array((message + counter).reversed()))
        return counter + mac[0 ..< 8].reversed()
    }

    /// The random address hash function ah (Core Vol 3 Part H §2.2.2): the 24-bit hash of a
    /// resolvable private address's prand `r` under the IRK `k` (most significant first).
    public static func ah(k: [UInt8], r: UInt32) throws(Failure) -> UInt32 {
        let block = [UInt8](repeating: 0, count: 13) + [UInt8(truncatingIfNeeded: r >> 16), UInt8(truncatingIfNeeded: r >> 8), UInt8(truncatingIfNeeded: r)]
        let out = try e(k, block)
        return out[13...].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func xor(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        var out = a
        for i in 0 ..< min(a.count, b.count) { out[i] ^= b[i] }
        return out
    }
}
