// Glucose characteristics (GSS §3.106 Glucose Measurement, §3.107 Glucose Measurement Context,
// §3.187 Record Access Control Point).
import BluetoothWire

/// Glucose Measurement (0x2A18): Flags (u8), Sequence Number (u16), Base Time (Date Time), then
/// by flags: Time Offset (bit 0, s16 minutes), Glucose Concentration (SFLOAT, kg/L or mol/L
/// by bit 2) with Type-Sample Location (u8) (both with bit 1), Sensor Status Annunciation
/// (bit 3, u16). Bit 4 says a Glucose Measurement Context with the same sequence number
/// follows. Bits 5...7 are reserved and kept.
///
/// Holds only scalars. Trailing bytes are an error.
public struct GlucoseMeasurement: WireEncodable, Hashable, Sendable {
    /// The Flags field: which optional fields follow, and the unit.
    public struct Flags: OptionSet, Hashable, Sendable {
        public var rawValue: UInt8
        @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Time offset present (0x01).
        public static let timeOffsetPresent = Flags(rawValue: 0x01)
        /// Concentration present (0x02).
        public static let concentrationPresent = Flags(rawValue: 0x02)
        /// Mol per liter (0x04).
        public static let molPerLiter = Flags(rawValue: 0x04)
        /// Sensor status present (0x08).
        public static let sensorStatusPresent = Flags(rawValue: 0x08)
        /// Context follows (0x10).
        public static let contextFollows = Flags(rawValue: 0x10)
    }

    /// The Flags field as received.
    public var flags: Flags
    /// The record's sequence number (what RACP operands refer to).
    public var sequenceNumber: UInt16
    /// When the measurement was taken (add ``timeOffset`` when present).
    public var baseTime: DateTime
    /// Minutes to add to the base time.
    public var timeOffset: Int16?
    /// In `concentrationUnit` (kg/L or mol/L).
    public var concentration: SFloat?
    /// Sample type and sample location (when the flags say so).
    public var typeAndLocation: GlucoseTypeSampleLocation?
    /// Sensor Status Annunciation (when the flags say so).
    public var sensorStatus: GlucoseSensorStatus?

    /// kg/L or mol/L (flag bit 2).
    @inlinable public var concentrationUnit: GlucoseConcentrationUnit {
        flags.rawValue & 0x04 != 0 ? .molPerLiter : .kgPerLiter
    }
    /// A Glucose Measurement Context with the same sequence number follows (flag bit 4).
    @inlinable public var contextFollows: Bool { flags.rawValue & 0x10 != 0 }

    /// `concentration` and `typeAndLocation` go together (flag bit 1): give both or neither.
    public init(sequenceNumber: UInt16, baseTime: DateTime, timeOffset: Int16? = nil,
                concentration: SFloat? = nil, unit: GlucoseConcentrationUnit = .kgPerLiter,
                typeAndLocation: GlucoseTypeSampleLocation? = nil, sensorStatus: GlucoseSensorStatus? = nil,
                contextFollows: Bool = false) {
        self.flags = Flags(rawValue: (unit == .molPerLiter ? 0x04 : 0) | (contextFollows ? 0x10 : 0))
        self.sequenceNumber = sequenceNumber
        self.baseTime = baseTime
        self.timeOffset = timeOffset
        self.concentration = concentration
        self.typeAndLocation = typeAndLocation
        self.sensorStatus = sensorStatus
        self.flags = Flags(rawValue: encodedFlags)
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("Glucose Measurement flags")
        sequenceNumber = try r.u16("sequence number")
        baseTime = try DateTime.read(&r)
        if f & 0x01 != 0 { timeOffset = Int16(bitPattern: try r.u16("time offset")) } else { timeOffset = nil }
        if f & 0x02 != 0 {
            concentration = SFloat(rawValue: try r.u16("glucose concentration (SFLOAT)"))
            typeAndLocation = GlucoseTypeSampleLocation(rawValue: try r.u8("type-sample location"))
        } else {
            concentration = nil
            typeAndLocation = nil
        }
        if f & 0x08 != 0 {
            sensorStatus = GlucoseSensorStatus(rawValue: try r.u16("sensor status annunciation"))
        } else {
            sensorStatus = nil
        }
        try r.expectEnd("bytes after the fields the Glucose Measurement flags announce")
        flags = Flags(rawValue: f)
    }

    @inlinable var encodedFlags: UInt8 {
        var f = flags.rawValue & ~0x0B
        if timeOffset != nil { f |= 0x01 }
        if concentration != nil { f |= 0x02 }
        if sensorStatus != nil { f |= 0x08 }
        return f
    }

    public var encodedLength: Int {
        10 + (timeOffset == nil ? 0 : 2) + (concentration == nil ? 0 : 3) + (sensorStatus == nil ? 0 : 2)
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        guard (concentration == nil) == (typeAndLocation == nil) else {
            throw WireError(.valueOutOfRange, at: w.count, "glucose concentration and type-sample location go together")
        }
        try w.u8(encodedFlags)
        try w.u16(sequenceNumber)
        try baseTime.write(&w)
        if let t = timeOffset { try w.u16(UInt16(bitPattern: t)) }
        if let c = concentration, let tl = typeAndLocation {
            try w.u16(c.rawValue)
            try w.u8(tl.rawValue)
        }
        if let s = sensorStatus { try w.u16(s.rawValue) }
    }

    var fields: [Field] {
        var f: [Field] = [
            Field("flags", .uint(UInt64(flags.rawValue))),
            Field("sequence_number", .uint(UInt64(sequenceNumber))),
            Field("base_time", .text(baseTime.description)),
        ]
        if let t = timeOffset {
            f.append(Field("time_offset", .int(Int64(t))))
            f.append(Field("time_offset_unit", .text("min")))
        }
        if let c = concentration, let tl = typeAndLocation {
            f.append(Field("glucose_concentration", c.fieldValue))
            f.append(Field("unit", .text(concentrationUnit.symbol)))
            if let v = c.value { f.append(Field(concentrationUnit.clinicalField, .double(v * concentrationUnit.clinicalFactor))) }
            f.append(Field("type", .named(UInt64(tl.type.rawValue), tl.type.name)))
            f.append(Field("sample_location", .named(UInt64(tl.location.rawValue), tl.location.name)))
        }
        if let s = sensorStatus { f.append(Field("sensor_status_annunciation", s.fieldValue)) }
        f.append(Field("context_follows", .bool(contextFollows)))
        if flags.rawValue & 0xE0 != 0 { f.append(Field("reserved_flags", .uint(UInt64(flags.rawValue & 0xE0)))) }
        return f
    }

    /// "#12, 5.3 mmol/L (0.0053 mol/L), capillary whole blood, finger, 2026-11-29 17:33:05 +5 min".
    public var summary: String {
        var parts = ["#\(sequenceNumber)"]
        if let c = concentration, let tl = typeAndLocation {
            let u = concentrationUnit
            if let v = c.value {
                parts.append("\(Display.number((v * u.clinicalFactor * 1000).rounded() / 1000)) \(u.clinicalSymbol) (\(c.text(u.symbol)))")
            } else {
                parts.append(c.text(u.symbol))
            }
            parts.append(tl.type.name)
            parts.append(tl.location.name)
        }
        var time = baseTime.description
        if let t = timeOffset { time += t >= 0 ? " +\(t) min" : " \(t) min" }
        parts.append(time)
        if let s = sensorStatus, s.rawValue != 0 { parts.append(s.summary) }
        if contextFollows { parts.append("context follows") }
        return parts.joined(separator: ", ")
    }
}

/// The unit of a glucose concentration (Glucose Measurement flag bit 2).
public enum GlucoseConcentrationUnit: Hashable, Sendable {
    case kgPerLiter, molPerLiter
    /// "kg/L" or "mol/L".
    public var symbol: String { self == .kgPerLiter ? "kg/L" : "mol/L" }
    /// The everyday unit: mg/dL (= kg/L × 10^5) or mmol/L (= mol/L × 1000).
    public var clinicalSymbol: String { self == .kgPerLiter ? "mg/dL" : "mmol/L" }
    /// To mg/dL (kg/L) or mmol/L (mol/L).
    public var clinicalFactor: Double { self == .kgPerLiter ? 100_000 : 1000 }
    var clinicalField: String { self == .kgPerLiter ? "glucose_mg_per_dl" : "glucose_mmol_per_l" }
}

/// Type-Sample Location (u8): the fluid type in the low nibble, the sample location in the high.
public struct GlucoseTypeSampleLocation: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Type (low nibble) and location (high nibble).
    @inlinable public init(type: GlucoseSampleType, location: GlucoseSampleLocation) {
        rawValue = (type.rawValue & 0x0F) | (location.rawValue & 0x0F) << 4
    }
    /// The sample type.
    @inlinable public var type: GlucoseSampleType { GlucoseSampleType(rawValue: rawValue & 0x0F) }
    /// The sample location.
    @inlinable public var location: GlucoseSampleLocation { GlucoseSampleLocation(rawValue: rawValue >> 4) }
}

/// Glucose fluid type (4 bits): 0 and 11...15 reserved.
public struct GlucoseSampleType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Capillary whole blood (1).
    public static let capillaryWholeBlood = Self(rawValue: 1)
    /// Capillary plasma (2).
    public static let capillaryPlasma = Self(rawValue: 2)
    /// Venous whole blood (3).
    public static let venousWholeBlood = Self(rawValue: 3)
    /// Venous plasma (4).
    public static let venousPlasma = Self(rawValue: 4)
    /// Arterial whole blood (5).
    public static let arterialWholeBlood = Self(rawValue: 5)
    /// Arterial plasma (6).
    public static let arterialPlasma = Self(rawValue: 6)
    /// Undetermined whole blood (7).
    public static let undeterminedWholeBlood = Self(rawValue: 7)
    /// Undetermined plasma (8).
    public static let undeterminedPlasma = Self(rawValue: 8)
    /// Interstitial fluid (9).
    public static let interstitialFluid = Self(rawValue: 9)
    /// Control solution (10).
    public static let controlSolution = Self(rawValue: 10)
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 1: "capillary whole blood"
        case 2: "capillary plasma"
        case 3: "venous whole blood"
        case 4: "venous plasma"
        case 5: "arterial whole blood"
        case 6: "arterial plasma"
        case 7: "undetermined whole blood"
        case 8: "undetermined plasma"
        case 9: "interstitial fluid"
        case 10: "control solution"
        default: "reserved"
        }
    }
}

/// Glucose sample location (4 bits): 15 = not available; 0, 5...14 reserved.
public struct GlucoseSampleLocation: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Finger (1).
    public static let finger = Self(rawValue: 1)
    /// Alternate site test (2).
    public static let alternateSiteTest = Self(rawValue: 2)
    /// Earlobe (3).
    public static let earlobe = Self(rawValue: 3)
    /// Control solution (4).
    public static let controlSolution = Self(rawValue: 4)
    /// Not available (15).
    public static let notAvailable = Self(rawValue: 15)
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 1: "finger"
        case 2: "alternate site test"
        case 3: "earlobe"
        case 4: "control solution"
        case 15: "location not available"
        default: "reserved"
        }
    }
}

/// Sensor Status Annunciation (u16 bit field of Glucose Measurement).
public struct GlucoseSensorStatus: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    @inlinable public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Battery low (bit 0).
    public static let batteryLow = Self(rawValue: 1 << 0)
    /// Sensor malfunction (bit 1).
    public static let sensorMalfunction = Self(rawValue: 1 << 1)
    /// Sample size insufficient (bit 2).
    public static let sampleSizeInsufficient = Self(rawValue: 1 << 2)
    /// Strip insertion error (bit 3).
    public static let stripInsertionError = Self(rawValue: 1 << 3)
    /// Strip type incorrect (bit 4).
    public static let stripTypeIncorrect = Self(rawValue: 1 << 4)
    /// Result too high (bit 5).
    public static let resultTooHigh = Self(rawValue: 1 << 5)
    /// Result too low (bit 6).
    public static let resultTooLow = Self(rawValue: 1 << 6)
    /// Temperature too high (bit 7).
    public static let temperatureTooHigh = Self(rawValue: 1 << 7)
    /// Temperature too low (bit 8).
    public static let temperatureTooLow = Self(rawValue: 1 << 8)
    /// Read interrupted (bit 9).
    public static let readInterrupted = Self(rawValue: 1 << 9)
    /// General device fault (bit 10).
    public static let generalDeviceFault = Self(rawValue: 1 << 10)
    /// Time fault (bit 11).
    public static let timeFault = Self(rawValue: 1 << 11)

    static let names: [Int: String] = [
        0: "device battery low", 1: "sensor malfunction", 2: "sample size insufficient",
        3: "strip insertion error", 4: "strip type incorrect", 5: "result higher than the device can process",
        6: "result lower than the device can process", 7: "temperature too high", 8: "temperature too low",
        9: "read interrupted (strip pulled too soon)", 10: "general device fault", 11: "time fault",
    ]
    var fieldValue: FieldValue { Display.bitField(UInt64(rawValue), width: 16, Self.names) }
    var summary: String { Display.bitNames(UInt64(rawValue), width: 16, Self.names).joined(separator: ", ") }
}

// MARK: - Glucose Measurement Context

/// Glucose Measurement Context (0x2A34): Flags (u8), Sequence Number (u16), then by flags:
/// Extended Flags (bit 7, u8), Carbohydrate ID (u8) + Carbohydrate (SFLOAT kg) (bit 0),
/// Meal (bit 1, u8), Tester-Health (bit 2, u8: tester low nibble, health high nibble),
/// Exercise Duration (u16 s, 0xFFFF = overrun) + Exercise Intensity (u8 %) (bit 3),
/// Medication ID (u8) + Medication (SFLOAT, kg or litres by bit 5) (bit 4), HbA1c (bit 6,
/// SFLOAT %). Holds only scalars; trailing bytes are an error.
public struct GlucoseMeasurementContext: WireEncodable, Hashable, Sendable {
    /// The Flags field as received.
    public var flags: UInt8
    /// The sequence number of the measurement this context belongs to.
    public var sequenceNumber: UInt16
    /// Extended Flags (flag bit 7).
    public var extendedFlags: UInt8?
    /// Carbohydrate ID and amount (flag bit 0).
    public var carbohydrate: Carbohydrate?
    /// Meal (flag bit 1).
    public var meal: GlucoseMeal?
    /// Tester and health (flag bit 2).
    public var testerHealth: GlucoseTesterHealth?
    /// Exercise duration and intensity (flag bit 3).
    public var exercise: Exercise?
    /// Medication ID and amount (flag bit 4).
    public var medication: Medication?
    /// Percent.
    public var hbA1c: SFloat?

    /// Carbohydrate ID and amount.
    public struct Carbohydrate: Hashable, Sendable {
        /// Which meal (breakfast, lunch...).
        public var id: CarbohydrateID
        /// Kilograms.
        public var amount: SFloat
        /// A carbohydrate entry as given.
        public init(id: CarbohydrateID, amount: SFloat) {
            self.id = id
            self.amount = amount
        }
    }

    /// Exercise duration and intensity.
    public struct Exercise: Hashable, Sendable {
        /// Seconds; 0xFFFF means overrun.
        public var duration: UInt16
        /// Percent.
        public var intensity: UInt8
        /// An exercise entry as given.
        public init(duration: UInt16, intensity: UInt8) {
            self.duration = duration
            self.intensity = intensity
        }
    }

    /// Medication ID and amount.
    public struct Medication: Hashable, Sendable {
        /// Which insulin.
        public var id: MedicationID
        /// Kilograms or litres (see `medicationUnit`).
        public var amount: SFloat
        /// A medication entry as given.
        public init(id: MedicationID, amount: SFloat) {
            self.id = id
            self.amount = amount
        }
    }

    /// Medication unit (flag bit 5): "kg" or "L".
    @inlinable public var medicationInLiters: Bool { flags & 0x20 != 0 }
    /// "L" or "kg" (flag bit 5).
    public var medicationUnit: String { medicationInLiters ? "L" : "kg" }

    /// A context; the flags follow from what is given.
    public init(sequenceNumber: UInt16, extendedFlags: UInt8? = nil, carbohydrate: Carbohydrate? = nil,
                meal: GlucoseMeal? = nil, testerHealth: GlucoseTesterHealth? = nil, exercise: Exercise? = nil,
                medication: Medication? = nil, medicationInLiters: Bool = false, hbA1c: SFloat? = nil) {
        self.flags = medicationInLiters ? 0x20 : 0
        self.sequenceNumber = sequenceNumber
        self.extendedFlags = extendedFlags
        self.carbohydrate = carbohydrate
        self.meal = meal
        self.testerHealth = testerHealth
        self.exercise = exercise
        self.medication = medication
        self.hbA1c = hbA1c
        self.flags = encodedFlags
    }

    /// Parses the value; a value too short or malformed throws a ``WireError`` with the offset.
    @inlinable
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        var r = ByteReader(bytes)
        let f = try r.u8("Glucose Measurement Context flags")
        sequenceNumber = try r.u16("sequence number")
        extendedFlags = f & 0x80 != 0 ? try r.u8("extended flags") : nil
        if f & 0x01 != 0 {
            let id = CarbohydrateID(rawValue: try r.u8("carbohydrate ID"))
            carbohydrate = Carbohydrate(id: id, amount: SFloat(rawValue: try r.u16("carbohydrate (SFLOAT)")))
        } else {
            carbohydrate = nil
        }
        meal = f & 0x02 != 0 ? GlucoseMeal(rawValue: try r.u8("meal")) : nil
        testerHealth = f & 0x04 != 0 ? GlucoseTesterHealth(rawValue: try r.u8("tester-health")) : nil
        if f & 0x08 != 0 {
            let d = try r.u16("exercise duration")
            exercise = Exercise(duration: d, intensity: try r.u8("exercise intensity"))
        } else {
            exercise = nil
        }
        if f & 0x10 != 0 {
            let id = MedicationID(rawValue: try r.u8("medication ID"))
            medication = Medication(id: id, amount: SFloat(rawValue: try r.u16("medication (SFLOAT)")))
        } else {
            medication = nil
        }
        hbA1c = f & 0x40 != 0 ? SFloat(rawValue: try r.u16("HbA1c (SFLOAT)")) : nil
        try r.expectEnd("bytes after the fields the Glucose Measurement Context flags announce")
        flags = f
    }

    @inlinable var encodedFlags: UInt8 {
        var f = flags & 0x20
        if carbohydrate != nil { f |= 0x01 }
        if meal != nil { f |= 0x02 }
        if testerHealth != nil { f |= 0x04 }
        if exercise != nil { f |= 0x08 }
        if medication != nil { f |= 0x10 }
        if hbA1c != nil { f |= 0x40 }
        if extendedFlags != nil { f |= 0x80 }
        return f
    }

    public var encodedLength: Int {
        3 + (extendedFlags == nil ? 0 : 1) + (carbohydrate == nil ? 0 : 3) + (meal == nil ? 0 : 1)
            + (testerHealth == nil ? 0 : 1) + (exercise == nil ? 0 : 3) + (medication == nil ? 0 : 3)
            + (hbA1c == nil ? 0 : 2)
    }

    public func encode(into w: inout ByteWriter) throws(WireError) {
        try w.u8(encodedFlags)
        try w.u16(sequenceNumber)
        if let e = extendedFlags { try w.u8(e) }
        if let c = carbohydrate {
            try w.u8(c.id.rawValue)
            try w.u16(c.amount.rawValue)
        }
        if let m = meal { try w.u8(m.rawValue) }
        if let t = testerHealth { try w.u8(t.rawValue) }
        if let e = exercise {
            try w.u16(e.duration)
            try w.u8(e.intensity)
        }
        if let m = medication {
            try w.u8(m.id.rawValue)
            try w.u16(m.amount.rawValue)
        }
        if let h = hbA1c { try w.u16(h.rawValue) }
    }

    var fields: [Field] {
        var f: [Field] = [
            Field("flags", .uint(UInt64(flags))),
            Field("sequence_number", .uint(UInt64(sequenceNumber))),
        ]
        if let e = extendedFlags { f.append(Field("extended_flags", .uint(UInt64(e)))) }
        if let c = carbohydrate {
            f.append(Field("carbohydrate_id", .named(UInt64(c.id.rawValue), c.id.name)))
            f.append(Field("carbohydrate", c.amount.fieldValue))
            f.append(Field("carbohydrate_unit", .text("kg")))
        }
        if let m = meal { f.append(Field("meal", .named(UInt64(m.rawValue), m.name))) }
        if let t = testerHealth {
            f.append(Field("tester", .named(UInt64(t.tester), t.testerName)))
            f.append(Field("health", .named(UInt64(t.health), t.healthName)))
        }
        if let e = exercise {
            f.append(Field("exercise_duration", e.duration == 0xFFFF ? .named(0xFFFF, "overrun") : .uint(UInt64(e.duration))))
            f.append(Field("exercise_duration_unit", .text("s")))
            f.append(Field("exercise_intensity", .uint(UInt64(e.intensity))))
            f.append(Field("exercise_intensity_unit", .text("%")))
        }
        if let m = medication {
            f.append(Field("medication_id", .named(UInt64(m.id.rawValue), m.id.name)))
            f.append(Field("medication", m.amount.fieldValue))
            f.append(Field("medication_unit", .text(medicationUnit)))
        }
        if let h = hbA1c {
            f.append(Field("hba1c", h.fieldValue))
            f.append(Field("hba1c_unit", .text("%")))
        }
        return f
    }

    /// The value in one line for people (what `hcigatt read` and `monitor` print).
    public var summary: String {
        var parts = ["#\(sequenceNumber)"]
        if let c = carbohydrate { parts.append("\(c.id.name) \(c.amount.text("kg")) carbohydrate") }
        if let m = meal { parts.append(m.name) }
        if let t = testerHealth { parts.append("tester: \(t.testerName), health: \(t.healthName)") }
        if let e = exercise { parts.append("exercise \(e.duration == 0xFFFF ? "overrun" : "\(e.duration) s") at \(e.intensity) %") }
        if let m = medication { parts.append("\(m.id.name) \(m.amount.text(medicationUnit))") }
        if let h = hbA1c { parts.append("HbA1c \(h.text("%"))") }
        return parts.joined(separator: ", ")
    }
}

/// Carbohydrate ID: 1 breakfast ... 7 brunch; others reserved.
public struct CarbohydrateID: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Breakfast (1).
    public static let breakfast = Self(rawValue: 1)
    /// Lunch (2).
    public static let lunch = Self(rawValue: 2)
    /// Dinner (3).
    public static let dinner = Self(rawValue: 3)
    /// Snack (4).
    public static let snack = Self(rawValue: 4)
    /// Drink (5).
    public static let drink = Self(rawValue: 5)
    /// Supper (6).
    public static let supper = Self(rawValue: 6)
    /// Brunch (7).
    public static let brunch = Self(rawValue: 7)
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 1: "breakfast"
        case 2: "lunch"
        case 3: "dinner"
        case 4: "snack"
        case 5: "drink"
        case 6: "supper"
        case 7: "brunch"
        default: "reserved"
        }
    }
}

/// Meal: 1 preprandial ... 5 bedtime; others reserved.
public struct GlucoseMeal: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Preprandial (1).
    public static let preprandial = Self(rawValue: 1)
    /// Postprandial (2).
    public static let postprandial = Self(rawValue: 2)
    /// Fasting (3).
    public static let fasting = Self(rawValue: 3)
    /// Casual (4).
    public static let casual = Self(rawValue: 4)
    /// Bedtime (5).
    public static let bedtime = Self(rawValue: 5)
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 1: "preprandial (before meal)"
        case 2: "postprandial (after meal)"
        case 3: "fasting"
        case 4: "casual"
        case 5: "bedtime"
        default: "reserved"
        }
    }
}

/// Tester (low nibble) and Health (high nibble).
public struct GlucoseTesterHealth: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Tester and health as given (low nibbles of each).
    @inlinable public init(tester: UInt8, health: UInt8) { rawValue = (tester & 0xF) | (health & 0xF) << 4 }
    /// Who tested: 1 self, 2 health care professional, 3 lab test, 15 not available.
    @inlinable public var tester: UInt8 { rawValue & 0x0F }
    /// The health state: 1 minor issues, 2 major, 3 menses, 4 stress, 5 none, 15 not available.
    @inlinable public var health: UInt8 { rawValue >> 4 }
    /// The tester in words.
    public var testerName: String {
        switch tester {
        case 1: "self"
        case 2: "health care professional"
        case 3: "lab test"
        case 15: "not available"
        default: "reserved"
        }
    }
    /// The health state in words.
    public var healthName: String {
        switch health {
        case 1: "minor health issues"
        case 2: "major health issues"
        case 3: "during menses"
        case 4: "under stress"
        case 5: "no health issues"
        case 15: "not available"
        default: "reserved"
        }
    }
}

/// Medication ID: 1 rapid-acting insulin ... 5 pre-mixed insulin; others reserved.
public struct MedicationID: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt8
    @inlinable public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Rapid acting insulin (1).
    public static let rapidActingInsulin = Self(rawValue: 1)
    /// Short acting insulin (2).
    public static let shortActingInsulin = Self(rawValue: 2)
    /// Intermediate acting insulin (3).
    public static let intermediateActingInsulin = Self(rawValue: 3)
    /// Long acting insulin (4).
    public static let longActingInsulin = Self(rawValue: 4)
    /// Pre mixed insulin (5).
    public static let preMixedInsulin = Self(rawValue: 5)
    /// The name from the specification.
    public var name: String {
        switch rawValue {
        case 1: "rapid acting insulin"
        case 2: "short acting insulin"
        case 3: "intermediate acting insulin"
        case 4: "long acting insulin"
        case 5: "pre-mixed insulin"
        default: "reserved"
        }
    }
}
