package vault

import (
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Encoding marks an encrypted payload; MetaKeyID names its key.
const (
	Encoding  = "binary/paddock-encrypted"
	MetaKeyID = "paddock-key-id"
)

// Codec is a Temporal payload codec: every payload leaves the process
// encrypted, so workflow history (in the embedded server's database or an
// external cluster) holds no message, response or output in clear text.
// Payloads written before encryption was enabled still decode.
type Codec struct{ Key *Key }

var _ converter.PayloadCodec = Codec{}

// DataConverter is the SDK's default converter with the codec, for client
// options.
func (c Codec) DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// Encode encrypts each payload (its metadata included).
func (c Codec) Encode(in []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(in))
	for i, p := range in {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("encrypt payload: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(Encoding), MetaKeyID: []byte(c.Key.ID)},
			Data:     c.Key.Encrypt(plain, []byte(Encoding)),
		}
	}
	return out, nil
}

// Decode decrypts the payloads Encode encrypted and passes others through.
func (c Codec) Decode(in []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(in))
	for i, p := range in {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != Encoding {
			out[i] = p
			continue
		}
		if id := string(p.GetMetadata()[MetaKeyID]); id != c.Key.ID {
			return nil, fmt.Errorf("payload %w %s, not the configured key %s: set PADDOCK_ENCRYPTION_KEY to the key this data was written with", ErrWrongKey, id, c.Key.ID)
		}
		plain, err := c.Key.Decrypt(p.GetData(), []byte(Encoding))
		if err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		var q commonpb.Payload
		if err := proto.Unmarshal(plain, &q); err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		out[i] = &q
	}
	return out, nil
}
