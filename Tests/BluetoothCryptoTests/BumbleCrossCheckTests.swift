import Glibc
import Testing
@testable import BluetoothCrypto

/// Vectors from Tests/integration/crypto_vectors.py (random inputs through bumble.crypto),
/// checked when $HCIGATT_CRYPTO_VECTORS names the file: the integration suite runs this
/// test with fresh vectors and checks it ran (test_crypto_cross_check.py).
@Suite struct BumbleCrossCheckTests {
    static let path: String? = getenv("HCIGATT_CRYPTO_VECTORS").map { String(cString: $0) }

    func lines() -> [[String]] {
        guard let path = Self.path, let f = fopen(path, "r") else { return [] }
        defer { fclose(f) }
        var out: [[String]] = []
        var buffer = [CChar](repeating: 0, count: 4096)
        while fgets(&buffer, 4096, f) != nil {
            let line = String(cString: buffer).split(separator: "\n").first.map(String.init) ?? ""
            if !line.isEmpty { out.append(line.split(separator: " ").map(String.init)) }
        }
        return out
    }

    @Test(.enabled(if: BumbleCrossCheckTests.path != nil))
    func everyFunctionAgreesWithBumble() throws {
        let cases = lines()
        #expect(cases.count >= 8 * 8, "the vector file has too few cases")
        var checked: [String: Int] = [:]
        for c in cases {
            let h = c.dropFirst().map { $0.utf8.count % 2 == 0 ? hexBytes($0) : [] }
            switch c[0] {
            case "c1":
                let out = try SecurityFunctions.c1(k: h[0], r: h[1], preq: h[2], pres: h[3], iat: UInt8(c[5])!, ia: h[5],
                                                   rat: UInt8(c[7])!, ra: h[7])
                #expect(out == h[8], "c1 \(c)")
            case "s1": #expect(try SecurityFunctions.s1(k: h[0], r1: h[1], r2: h[2]) == h[3], "s1 \(c)")
            case "f4": #expect(try SecurityFunctions.f4(u: h[0], v: h[1], x: h[2], z: h[3][0]) == h[4], "f4 \(c)")
            case "f5":
                let (mac, ltk) = try SecurityFunctions.f5(w: h[0], n1: h[1], n2: h[2], a1: h[3], a2: h[4])
                #expect(mac == h[5] && ltk == h[6], "f5 \(c)")
            case "f6":
                #expect(try SecurityFunctions.f6(w: h[0], n1: h[1], n2: h[2], r: h[3], ioCap: h[4], a1: h[5], a2: h[6]) == h[7], "f6 \(c)")
            case "g2": #expect(try SecurityFunctions.g2(u: h[0], v: h[1], x: h[2], y: h[3]) == UInt32(c[5], radix: 16), "g2 \(c)")
            case "ah":
                let r = h[1].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                let expected = h[2].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                #expect(try SecurityFunctions.ah(k: h[0], r: r) == expected, "ah \(c)")
            case "ecdh":
                let a = try P256.PrivateKey(rawValue: h[0])
                #expect(a.publicKey == P256.PublicKey(x: h[1], y: h[2]), "ecdh public key \(c)")
                #expect(try a.sharedSecret(with: P256.PublicKey(x: h[3], y: h[4])) == h[5], "ecdh \(c)")
            default:
                Issue.record("unknown vector \(c[0])")
            }
            checked[c[0], default: 0] += 1
        }
        #expect(Set(checked.keys) == ["c1", "s1", "f4", "f5", "f6", "g2", "ah", "ecdh"])
        print("crypto cross-check: \(cases.count) vectors agree with bumble.crypto (\(checked.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))")
    }
}
