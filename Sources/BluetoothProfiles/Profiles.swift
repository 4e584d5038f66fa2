// BluetoothProfiles: characteristic value codecs from the GATT Specification Supplement,
// above GATT. Pure and allocation-free like BluetoothWire: decoders read views, encoders
// write into a ByteWriter.
import BluetoothWire
