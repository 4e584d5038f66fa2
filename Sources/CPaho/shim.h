// Eclipse Paho MQTT C (libpaho-mqtt-dev): the asynchronous client with TLS (paho-mqtt3as,
// on OpenSSL's libssl). The embedded binary links its static archive (scripts/build-static).
// Swift cannot use the header's initializer macros, so each has a function here.
#ifndef HCIGATT_CPAHO_SHIM_H
#define HCIGATT_CPAHO_SHIM_H
#include <MQTTAsync.h>

static inline MQTTAsync_createOptions hcigatt_mqtt_create_options(int mqtt5) {
    MQTTAsync_createOptions o = MQTTAsync_createOptions_initializer;
    MQTTAsync_createOptions o5 = MQTTAsync_createOptions_initializer5;
    return mqtt5 ? o5 : o;
}

static inline MQTTAsync_connectOptions hcigatt_mqtt_connect_options(int mqtt5) {
    MQTTAsync_connectOptions o = MQTTAsync_connectOptions_initializer;
    MQTTAsync_connectOptions o5 = MQTTAsync_connectOptions_initializer5;
    return mqtt5 ? o5 : o;
}

static inline MQTTAsync_willOptions hcigatt_mqtt_will_options(void) {
    MQTTAsync_willOptions o = MQTTAsync_willOptions_initializer;
    return o;
}

static inline MQTTAsync_SSLOptions hcigatt_mqtt_ssl_options(void) {
    MQTTAsync_SSLOptions o = MQTTAsync_SSLOptions_initializer;
    return o;
}

static inline MQTTAsync_responseOptions hcigatt_mqtt_response_options(void) {
    MQTTAsync_responseOptions o = MQTTAsync_responseOptions_initializer;
    return o;
}

static inline MQTTAsync_message hcigatt_mqtt_message(void) {
    MQTTAsync_message o = MQTTAsync_message_initializer;
    return o;
}

static inline MQTTAsync_disconnectOptions hcigatt_mqtt_disconnect_options(int mqtt5) {
    MQTTAsync_disconnectOptions o = MQTTAsync_disconnectOptions_initializer;
    MQTTAsync_disconnectOptions o5 = MQTTAsync_disconnectOptions_initializer5;
    return mqtt5 ? o5 : o;
}

static inline MQTTProperties hcigatt_mqtt_properties(void) {
    MQTTProperties p = MQTTProperties_initializer;
    return p;
}

static inline MQTTAsync_init_options hcigatt_mqtt_init_options(void) {
    MQTTAsync_init_options o = MQTTAsync_init_options_initializer;
    return o;
}

/// One MQTT 5 property with a 4-byte integer value (Session Expiry Interval).
static inline int hcigatt_mqtt_add_int_property(MQTTProperties *props, enum MQTTPropertyCodes code, int value) {
    MQTTProperty p;
    p.identifier = code;
    p.value.integer4 = value;
    return MQTTProperties_add(props, &p);
}
#endif
