import Testing
@testable import BluetoothWire

private func parseSMP<R>(_ bytes: [UInt8], _ body: (SMPPDU) throws -> R) throws -> R {
    try withBytes(bytes) { buf in try body(try SMPPDU(parsing: buf)) }
}

@Suite struct SMPTests {
    @Test func pairingRequestVector() throws {
        // NoInputNoOutput, no OOB, bonding, 16-byte keys, EncKey|IdKey|SignKey both ways.
        let p = try parseSMP(h("01 03 00 01 10 07 07")) { pdu -> SMPPairingParameters? in
            guard case .pairingRequest(let p) = pdu else { return nil }
            return p
        }
        let expected = SMPPairingParameters(
            ioCapability: .noInputNoOutput, oobDataFlag: .notPresent, authenticationRequirements: .bonding,
            maximumEncryptionKeySize: 16, initiatorKeyDistribution: [.encryptionKey, .identityKey, .signingKey],
            responderKeyDistribution: [.encryptionKey, .identityKey, .signingKey])
        #expect(p == expected)
        #expect(try encode(SMPPDU.pairingRequest(expected)) == h("01 03 00 01 10 07 07"))
        let fields = try parseSMP(h("01 03 00 01 10 07 07")) { $0.fields }
        #expect(fields.contains(Field("io_capability", .named(3, "NoInputNoOutput"))))
        #expect(fields.contains(Field("maximum_encryption_key_size", .uint(16))))
    }

    @Test func secureConnectionsPairingResponse() throws {
        // KeyboardDisplay, bonding + MITM + SC + CT2 (0x2D), key size 16, init IdKey, resp EncKey|IdKey.
        let p = try parseSMP(h("02 04 00 2D 10 02 03")) { pdu -> SMPPairingParameters? in
            guard case .pairingResponse(let p) = pdu else { return nil }
            return p
        }
        #expect(p?.authenticationRequirements.contains([.bonding, .mitm, .secureConnections, .ct2]) == true)
        #expect(p?.authenticationRequirements.contains(.keypress) == false)
        #expect(p?.authenticationRequirements.bondingFlags == 1)
        #expect(p?.ioCapability == .keyboardDisplay)
        #expect(p?.initiatorKeyDistribution == .identityKey)
        #expect(p?.responderKeyDistribution == [.encryptionKey, .identityKey])
    }

    @Test func keyDistributionAndIdentityVectors() throws {
        let ltk = try parseSMP(h("06 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F")) { pdu -> UInt128? in
            guard case .encryptionInformation(let k) = pdu else { return nil }
            return k
        }
        #expect(ltk.map(SMP.bytes) == h("00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F"))
        let fields = try parseSMP(h("06 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F")) { $0.fields }
        #expect(fields.contains(Field("long_term_key", .bytes(h("00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F")))))

        let central = try parseSMP(h("07 34 12 88 77 66 55 44 33 22 11")) { pdu -> (UInt16, UInt64)? in
            guard case .centralIdentification(let ediv, let rand) = pdu else { return nil }
            return (ediv, rand)
        }
        #expect(central?.0 == 0x1234 && central?.1 == 0x1122_3344_5566_7788)

        let id = try parseSMP(h("09 01 01 E2 FD 17 72 E4")) { pdu -> LEAddress? in
            guard case .identityAddressInformation(let a) = pdu else { return nil }
            return a
        }
        #expect(id == LEAddress(BluetoothAddress("E4:72:17:FD:E2:01")!, type: .random))
        #expect(id?.kind == .randomStatic)

        let failed = try parseSMP(h("05 08")) { pdu -> SMPPairingFailedReason? in
            guard case .pairingFailed(let r) = pdu else { return nil }
            return r
        }
        #expect(failed == .unspecifiedReason && failed?.name == "Unspecified Reason")
        #expect(SMPPairingFailedReason.keyRejected.name == "Key Rejected")
    }

    @Test func everyPDURoundTrips() throws {
        let k: UInt128 = 0x0F0E_0D0C_0B0A_0908_0706_0504_0302_0100
        let x = SMPUInt256(wireBytes: (0 ..< 32).map { UInt8($0) })!
        let y = SMPUInt256(wireBytes: (0 ..< 32).map { UInt8(0xFF - $0) })!
        let pdus: [SMPPDU] = [
            .pairingRequest(SMPPairingParameters(ioCapability: .displayYesNo, authenticationRequirements: [.bonding, .mitm],
                                                 maximumEncryptionKeySize: 7, initiatorKeyDistribution: [],
                                                 responderKeyDistribution: .linkKey)),
            .pairingResponse(SMPPairingParameters(ioCapability: .keyboardOnly, oobDataFlag: .present,
                                                  authenticationRequirements: [.secureConnections, .keypress],
                                                  initiatorKeyDistribution: .signingKey, responderKeyDistribution: .encryptionKey)),
            .pairingConfirm(confirmValue: k),
            .pairingRandom(randomValue: ~k),
            .pairingFailed(reason: .dhKeyCheckFailed),
            .encryptionInformation(longTermKey: k),
            .centralIdentification(ediv: 0xBEEF, rand: 0x0102_0304_0506_0708),
            .identityInformation(identityResolvingKey: k &+ 1),
            .identityAddressInformation(LEAddress(BluetoothAddress("00:1B:DC:07:32:EF")!, type: .public)),
            .signingInformation(signatureKey: k &* 3),
            .securityRequest([.bonding, .mitm, .secureConnections]),
            .pairingPublicKey(x: x, y: y),
            .pairingDHKeyCheck(k >> 3),
            .pairingKeypressNotification(.passkeyDigitEntered),
        ]
        for pdu in pdus {
            let bytes = try pdu.encoded()
            #expect(bytes.count == pdu.encodedLength)
            #expect(bytes.first == pdu.code.rawValue)
            let (again, fields, title) = try parseSMP(bytes) { (try $0.encoded(), $0.fields, $0.fieldTitle) }
            #expect(again == bytes)
            #expect(fields == pdu.fields)
            #expect(title.hasPrefix("SMP "))
        }
        #expect(x.wireBytes == (0 ..< 32).map { UInt8($0) })
        let unknown = try parseSMP(h("0F 01 02")) { pdu -> (SMPCode, [UInt8])? in
            guard case .unknown(let c, let d) = pdu else { return nil }
            return (c, Array(d))
        }
        #expect(unknown?.0 == SMPCode(rawValue: 0x0F) && unknown?.1 == [1, 2])
    }

    @Test func truncatedAtEveryLengthAndTrailingBytes() throws {
        let valid = [
            h("01 03 00 01 10 07 07"), h("02 03 00 01 10 07 07"),
            h("03") + [UInt8](repeating: 0xA5, count: 16), h("04") + [UInt8](repeating: 0x5A, count: 16),
            h("05 04"), h("06") + [UInt8](repeating: 1, count: 16), h("07 34 12 88 77 66 55 44 33 22 11"),
            h("08") + [UInt8](repeating: 2, count: 16), h("09 00 01 E2 FD 17 72 E4"),
            h("0A") + [UInt8](repeating: 3, count: 16), h("0B 0D"), h("0C") + [UInt8](repeating: 4, count: 64),
            h("0D") + [UInt8](repeating: 5, count: 16), h("0E 04"),
        ]
        for v in valid {
            #expect(wireError(v) { try SMPPDU(parsing: $0) } == nil, "\(v)")
            for n in 0 ..< v.count {
                #expect(wireError(Array(v.prefix(n))) { try SMPPDU(parsing: $0) }?.code == .truncated, "prefix \(n) of \(v)")
            }
            #expect(wireError(v + [0]) { try SMPPDU(parsing: $0) }?.code == .trailingBytes, "\(v) + 1")
        }
    }

    @Test func invalidKeySize() throws {
        #expect(wireError(h("01 03 00 01 06 07 07")) { try SMPPDU(parsing: $0) } == WireError(.invalidValue, at: 4, ""))
        #expect(wireError(h("02 03 00 01 11 07 07")) { try SMPPDU(parsing: $0) } == WireError(.invalidValue, at: 4, ""))
        #expect(wireError(h("01 03 00 01 00 07 07")) { try SMPPDU(parsing: $0) }?.code == .invalidValue)
        #expect(wireError(h("01 03 00 01 07 07 07")) { try SMPPDU(parsing: $0) } == nil)
        let bad = SMPPDU.pairingRequest(SMPPairingParameters(
            ioCapability: .displayOnly, authenticationRequirements: [], maximumEncryptionKeySize: 17,
            initiatorKeyDistribution: [], responderKeyDistribution: []))
        #expect(throws: WireError.self) { try bad.encoded() }
        // Open fields keep unknown values rather than failing.
        #expect(wireError(h("01 09 07 C1 10 F0 F0")) { try SMPPDU(parsing: $0) } == nil)
        #expect(wireError(h("0E 09")) { try SMPPDU(parsing: $0) } == nil)
    }
}
