@testable import BluetoothWire
import Testing

/// The text of IEEE 11073 numbers and date-times, written in place, against the plain
/// string arithmetic they replaced (kept here as the reference).
@Suite struct DecimalTextTests {
    static func referenceDecimal(_ mantissa: Int32, _ exponent: Int8) -> String {
        let negative = mantissa < 0
        var digits = String(mantissa.magnitude)
        let e = Int(exponent)
        if e >= 0 {
            if mantissa != 0 { digits += String(repeating: "0", count: e) }
        } else {
            let fraction = -e
            if digits.count <= fraction { digits = String(repeating: "0", count: fraction + 1 - digits.count) + digits }
            let split = digits.index(digits.endIndex, offsetBy: -fraction)
            digits = digits[..<split] + "." + digits[split...]
        }
        return negative ? "-" + digits : digits
    }

    @Test func decimalStringsAsTheReference() {
        let mantissas: [Int32] = [0, 1, -1, 9, 10, -10, 364, -364, 99_999, 8_388_607, -8_388_608, 1_000_000, .max, .min, 2047, -2048]
        for m in mantissas {
            for e in [Int8.min, -127, -20, -10, -9, -8, -3, -2, -1, 0, 1, 2, 3, 10, 20, 127, .max] {
                #expect(IEEE11073.decimalString(m, e) == Self.referenceDecimal(m, e), "\(m)e\(e)")
            }
        }
    }

    @Test func dateTimesAsYearMonthDayTime() {
        #expect(DateTime(year: 2026, month: 12, day: 5, hours: 17, minutes: 33, seconds: 5).description == "2026-12-05 17:33:05")
        #expect(DateTime(year: 0, month: 0, day: 0, hours: 0, minutes: 0, seconds: 0).description == "????-??-?? 00:00:00")
        #expect(DateTime(year: 582, month: 1, day: 31, hours: 9, minutes: 59, seconds: 60).description == "0582-01-31 09:59:60")
        // Out-of-range values off the wire are shown as sent, not clipped.
        #expect(DateTime(year: 65535, month: 255, day: 99, hours: 255, minutes: 100, seconds: 7).description
            == "65535-255-99 255:100:07")
    }
}
