import Testing
@testable import BluetoothCrypto

/// "20b003d2 f297be2c" → bytes, most significant first (the specification's notation).
func hexBytes(_ s: String) -> [UInt8] {
    let digits = Array(s.utf8.filter { $0 != 0x20 })
    precondition(digits.count % 2 == 0)
    func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case 0x30 ... 0x39: c - 0x30
        case 0x61 ... 0x66: c - 0x61 + 10
        case 0x41 ... 0x46: c - 0x41 + 10
        default: preconditionFailure("not hex")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { nibble(digits[$0]) << 4 | nibble(digits[$0 + 1]) }
}

/// The Security Manager's functions against the specification's sample data (Core Vol 3
/// Part H §2.2.3, §2.2.4 and Appendix D), cross-checked by Android, BTstack and Bumble.
@Suite struct SecurityFunctionsTests {
    // Appendix D.2–D.8 share these.
    let u = hexBytes("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
    let v = hexBytes("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    let n1 = hexBytes("d5cb8454 d177733e ffffb2ec 712baeab")
    let n2 = hexBytes("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf")
    let dhKey = hexBytes("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")
    let a1 = hexBytes("00561237 37bfce")
    let a2 = hexBytes("00a71370 2dcfc1")

    /// Signed Write's signature (Core Vol 3 Part H §2.4.5) against BlueZ's unit/test-crypto.c:
    /// RFC 4493's key and messages, and a real Signed Write Command with SignCounter 1
    /// (wire order: SignCounter, then the MAC least significant first).
    @Test func signatureOfASignedWrite() throws {
        let rfcKey = hexBytes("2b7e1516 28aed2a6 abf71588 09cf4f3c")
        let rfcMessage = hexBytes("6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51"
                                  + "30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710")
        for (length, expected) in [(0, "00000000 b3a85941 27ebc2c0"), (16, "00000000 273974f4 392a232a"),
                                   (40, "00000000 b7ca94ab 87c78218"), (64, "00000000 44e1e6ce 1df51368")] {
            #expect(try SecurityFunctions.signature(csrk: rfcKey, message: Array(rfcMessage[0 ..< length]), signCounter: 0)
                    == hexBytes(expected), "\(length)-byte message")
        }
        // Signed Write Command to handle 0x0012 of 13 37, SignCounter 1.
        let csrk = hexBytes("611b64eb fbcd1fd3 72ec9196 df425e50")
        #expect(try SecurityFunctions.signature(csrk: csrk, message: [0xD2, 0x12, 0x00, 0x13, 0x37], signCounter: 1)
                == hexBytes("01000000 f1871e93 3c900ff2"))
    }

    @Test func c1LegacyConfirm() throws {
        // §2.2.3: Pairing Request 01 01 00 00 10 07 07, Response 02 03 00 00 08 00 05 (as sent).
        let c = try SecurityFunctions.c1(k: [UInt8](repeating: 0, count: 16), r: hexBytes("5783d521 56ad6f0e 6388274e c6702ee0"),
                                         preq: [0x01, 0x01, 0x00, 0x00, 0x10, 0x07, 0x07],
                                         pres: [0x02, 0x03, 0x00, 0x00, 0x08, 0x00, 0x05],
                                         iat: 1, ia: hexBytes("a1a2a3a4a5a6"), rat: 0, ra: hexBytes("b1b2b3b4b5b6"))
        #expect(c == hexBytes("1e1e3fef 878988ea d2a74dc5 bef13b86"))
    }

    @Test func s1ShortTermKey() throws {
        let stk = try SecurityFunctions.s1(k: [UInt8](repeating: 0, count: 16),
                                           r1: hexBytes("000f0e0d 0c0b0a09 11223344 55667788"),
                                           r2: hexBytes("01020304 05060708 99aabbcc ddeeff00"))
        #expect(stk == hexBytes("9a1fe1f0 e8b0f49b 5b4216ae 796da062"))
    }

    @Test func f4Confirm() throws {
        #expect(try SecurityFunctions.f4(u: u, v: v, x: n1, z: 0) == hexBytes("f2c916f1 07a9bd1c f1eda1be a974872d"))
    }

    @Test func f5KeyGeneration() throws {
        let (macKey, ltk) = try SecurityFunctions.f5(w: dhKey, n1: n1, n2: n2, a1: a1, a2: a2)
        #expect(macKey == hexBytes("2965f176 a1084a02 fd3f6a20 ce636e20"))
        #expect(ltk == hexBytes("69867911 69d7cd23 980522b5 94750a38"))
    }

    @Test func f6Check() throws {
        let e = try SecurityFunctions.f6(w: hexBytes("2965f176 a1084a02 fd3f6a20 ce636e20"), n1: n1, n2: n2,
                                         r: hexBytes("12a3343b b453bb54 08da42d2 0c2d0fc8"), ioCap: [0x01, 0x01, 0x02],
                                         a1: a1, a2: a2)
        #expect(e == hexBytes("e3c47398 9cd0e8c5 d26c0b09 da958f61"))
    }

    @Test func g2NumericComparison() throws {
        let value = try SecurityFunctions.g2(u: u, v: v, x: n1, y: n2)
        #expect(value == 0x2f9ed5ba)
        #expect(value % 1_000_000 == 938554)
    }

    @Test func h6AndH7LinkKeyConversion() throws {
        let w = hexBytes("ec0234a3 57c8ad05 341010a6 0a397d9b")
        #expect(try SecurityFunctions.h6(w: w, keyID: hexBytes("6c656272")) == hexBytes("2d9ae102 e76dc91c e8d3a9e2 80b16399"))
        #expect(try SecurityFunctions.h7(salt: hexBytes("00000000 00000000 00000000 746d7031"), w: w)
                == hexBytes("fb173597 c6a3c0ec d2998c2a 75a57011"))
    }

    @Test func ahRandomAddressHash() throws {
        #expect(try SecurityFunctions.ah(k: hexBytes("ec0234a3 57c8ad05 341010a6 0a397d9b"), r: 0x708194) == 0x0dfbaa)
    }
}

/// P-256 against the specification's sample keys (the debug key pair of §2.3.5.6.1 with
/// Appendix D's DHKey, and a second data set).
@Suite struct P256Tests {
    struct Pair {
        var privateA, ax, ay, privateB, bx, by, dhKey: String
    }
    let sets = [
        Pair(privateA: "3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd",
             ax: "20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6",
             ay: "dc809c49 652aeb6d 63329abf 5a52155c 766345c2 8fed3024 741c8ed0 1589d28b",
             privateB: "55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd",
             bx: "1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190",
             by: "4c55f33e 429dad37 7356703a 9ab85160 472d1130 e28e3676 5f89aff9 15b1214a",
             dhKey: "ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698"),
        Pair(privateA: "06a51669 3c9aa31a 6084545d 0c5db641 b48572b9 7203ddff b7ac73f7 d0457663",
             ax: "2c31a47b 5779809e f44cb5ea af5c3e43 d5f8faad 4a8794cb 987e9b03 745c78dd",
             ay: "91951218 3898dfbe cd52e240 8e43871f d0211091 17bd3ed4 eaf84377 43715d4f",
             privateB: "529aa067 0d72cd64 97502ed4 73502b03 7e8803b5 c60829a5 a3caa219 505530ba",
             bx: "f465e43f f23d3f1b 9dc7dfc0 4da87581 84dbc966 204796ec cf0d6cf5 e16500cc",
             by: "0201d048 bcbbd899 eeefc424 164e33c2 01c2b010 ca6b4d43 a8a155ca d8ecb279",
             dhKey: "ab85843a 2f6d883f 62e5684b 38e30733 5fe6e194 5ecd1960 4105c6f2 3221eb69"),
    ]

    @Test func publicKeysAndDHKeysOfTheSampleData() throws {
        for s in sets {
            let a = try P256.PrivateKey(rawValue: hexBytes(s.privateA))
            let b = try P256.PrivateKey(rawValue: hexBytes(s.privateB))
            #expect(a.publicKey == P256.PublicKey(x: hexBytes(s.ax), y: hexBytes(s.ay)))
            #expect(b.publicKey == P256.PublicKey(x: hexBytes(s.bx), y: hexBytes(s.by)))
            #expect(try a.sharedSecret(with: b.publicKey) == hexBytes(s.dhKey))
            #expect(try b.sharedSecret(with: a.publicKey) == hexBytes(s.dhKey))
        }
    }

    @Test func freshKeysAgree() throws {
        let a = try P256.PrivateKey.generate(), b = try P256.PrivateKey.generate()
        #expect(a.rawValue != b.rawValue)
        #expect(try a.sharedSecret(with: b.publicKey) == b.sharedSecret(with: a.publicKey))
    }

    @Test func aPublicKeyOffTheCurveIsRefusedAndNeverUsed() throws {
        let a = try P256.PrivateKey(rawValue: hexBytes(sets[0].privateA))
        var bad = a.publicKey
        bad.y[31] ^= 1   // a single flipped bit: not on the curve
        #expect(!bad.isValid)
        #expect(throws: P256.KeyError.invalidPublicKey) { try a.sharedSecret(with: bad) }
        // Coordinates not below p, and the all-zero "point".
        let p = hexBytes("ffffffff 00000001 00000000 00000000 00000000 ffffffff ffffffff ffffffff")
        #expect(!P256.PublicKey(x: p, y: a.publicKey.y).isValid)
        #expect(throws: P256.KeyError.invalidPublicKey) { try a.sharedSecret(with: P256.PublicKey(x: [UInt8](repeating: 0, count: 32), y: [UInt8](repeating: 0, count: 32))) }
    }

    @Test func privateKeysOutsideTheGroupOrderAreRefused() {
        #expect(throws: P256.KeyError.invalidPrivateKey) { try P256.PrivateKey(rawValue: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: P256.KeyError.invalidPrivateKey) { try P256.PrivateKey(rawValue: [UInt8](repeating: 0xFF, count: 32)) }
        // n itself is refused; n − 1 is the last valid scalar, and (n − 1)·G = −G = (Gx, p − Gy).
        let n = hexBytes("ffffffff 00000000 ffffffff ffffffff bce6faad a7179e84 f3b9cac2 fc632551")
        #expect(throws: P256.KeyError.invalidPrivateKey) { try P256.PrivateKey(rawValue: n) }
        var last = n
        last[31] -= 1
        let key = try? P256.PrivateKey(rawValue: last)
        #expect(key?.publicKey == P256.PublicKey(x: hexBytes("6b17d1f2 e12c4247 f8bce6e5 63a440f2 77037d81 2deb33a0 f4a13945 d898c296"),
                                                  y: hexBytes("b01cbd1c 01e58065 711814b5 83f061e9 d431cca9 94cea131 3449bf97 c840ae0a")))
    }

    @Test("A private key of 1 gives the generator; the point at infinity is no public key")
    func generatorAndInfinity() throws {
        var one = [UInt8](repeating: 0, count: 32)
        one[31] = 1
        let g = try P256.PrivateKey(rawValue: one).publicKey
        #expect(g.x == hexBytes("6b17d1f2 e12c4247 f8bce6e5 63a440f2 77037d81 2deb33a0 f4a13945 d898c296"))
        #expect(g.y == hexBytes("4fe342e2 fe1a7f9b 8ee7eb4a 7c0f9e16 2bce3357 6b315ece cbb64068 37bf51f5"))
        #expect(g.isValid)
        // x + p with the same y: the same point mod p, refused because it is not reduced
        // (only possible for x < 2^256 − p, so checked with a small x here).
        let xPlusP = hexBytes("ffffffff 00000001 00000000 00000000 00000001 00000000 00000000 00000005")
        #expect(!P256.PublicKey(x: xPlusP, y: g.y).isValid)
    }
}
