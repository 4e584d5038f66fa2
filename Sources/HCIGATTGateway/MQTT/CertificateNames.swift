// What the TLS client checks in the broker's certificate beyond BearSSL's minimal engine:
// the iPAddress names of its subjectAltName extension (RFC 5280 §4.2.1.6), for a broker
// given by an IP literal. A small DER reader: bounds-checked, no copies, typed errors.

/// The broker certificate's names that BearSSL does not check.
enum CertificateNames {
    /// Why a certificate could not be read: where and what.
    struct Failure: Error, Equatable, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "at byte \(offset): \(reason)" }
    }

    /// One DER element: its tag and where its contents are.
    struct Element {
        var tag: UInt8
        var contents: Range<Int>
    }

    /// The element at `offset` of `der` that ends by `end`.
    static func element(_ der: UnsafeRawBufferPointer, at offset: Int, end: Int) throws(Failure) -> Element {
        guard offset + 2 <= end else { throw Failure(offset: offset, reason: "truncated element") }
        let tag = der[offset]
        guard tag & 0x1F != 0x1F else { throw Failure(offset: offset, reason: "high tag numbers are not used in certificates") }
        var at = offset + 1
        let first = der[at]
        at += 1
        var length = 0
        if first < 0x80 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard (1 ... 3).contains(count) else { throw Failure(offset: offset + 1, reason: "length of \(count) bytes") }
            guard at + count <= end else { throw Failure(offset: at, reason: "truncated length") }
            for _ in 0 ..< count {
                length = length << 8 | Int(der[at])
                at += 1
            }
        }
        guard length <= end - at else { throw Failure(offset: offset, reason: "contents of \(length) bytes past the end") }
        return Element(tag: tag, contents: at ..< at + length)
    }

    /// The elements inside `range` of `der`, in order.
    static func elements(_ der: UnsafeRawBufferPointer, in range: Range<Int>) throws(Failure) -> [Element] {
        var out: [Element] = []
        var at = range.lowerBound
        while at < range.upperBound {
            let e = try element(der, at: at, end: range.upperBound)
            out.append(e)
            at = e.contents.upperBound
        }
        return out
    }

    /// The subjectAltName extension's OID, 2.5.29.17.
    static let subjectAltName: [UInt8] = [0x55, 0x1D, 0x11]

    /// The iPAddress entries (4 or 16 bytes each; [7] IMPLICIT OCTET STRING) of the
    /// certificate's subjectAltName; none when it has no such extension.
    static func ipAddresses(_ der: UnsafeRawBufferPointer) throws(Failure) -> [[UInt8]] {
        let certificate = try element(der, at: 0, end: der.count)
        guard certificate.tag == 0x30 else { throw Failure(offset: 0, reason: "not a SEQUENCE") }
        guard let tbs = try elements(der, in: certificate.contents).first, tbs.tag == 0x30 else {
            throw Failure(offset: certificate.contents.lowerBound, reason: "no tbsCertificate")
        }
        // extensions [3] EXPLICIT, the last field of the tbsCertificate (v3 only).
        guard let wrapper = try elements(der, in: tbs.contents).first(where: { $0.tag == 0xA3 }) else { return [] }
        guard let list = try elements(der, in: wrapper.contents).first, list.tag == 0x30 else {
            throw Failure(offset: wrapper.contents.lowerBound, reason: "extensions are not a SEQUENCE")
        }
        var out: [[UInt8]] = []
        for ext in try elements(der, in: list.contents) {
            guard ext.tag == 0x30 else { throw Failure(offset: ext.contents.lowerBound, reason: "an extension is not a SEQUENCE") }
            let fields = try elements(der, in: ext.contents)
            guard let oid = fields.first, oid.tag == 0x06 else { throw Failure(offset: ext.contents.lowerBound, reason: "an extension without its OID") }
            guard der[oid.contents].elementsEqual(subjectAltName) else { continue }
            guard let value = fields.last, value.tag == 0x04 else { throw Failure(offset: oid.contents.upperBound, reason: "subjectAltName without its value") }
            let names = try element(der, at: value.contents.lowerBound, end: value.contents.upperBound)
            guard names.tag == 0x30 else { throw Failure(offset: value.contents.lowerBound, reason: "GeneralNames is not a SEQUENCE") }
            for name in try elements(der, in: names.contents) where name.tag == 0x87 {
                guard name.contents.count == 4 || name.contents.count == 16 else {
                    throw Failure(offset: name.contents.lowerBound, reason: "an iPAddress of \(name.contents.count) bytes")
                }
                out.append(Array(der[name.contents]))
            }
        }
        return out
    }
}
