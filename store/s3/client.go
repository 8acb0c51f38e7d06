package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/braidhq/braid/store"
)

// Client is an S3 client with the endpoint it talks to, for error
// messages. NewClient makes one from a Config and the AWS environment.
type Client struct {
	api      *awss3.Client
	endpoint string // as errors name it
	creds    string // where the credentials came from, for errors
	timeout  time.Duration
}

// NewClient resolves the endpoint, region and credentials (Config's
// fields first, then the standard AWS environment and files) and returns
// a client. It makes no request.
func NewClient(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	endpoint := firstOf(cfg.Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"))
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient(cfg.Timeout)),
		config.WithRetryMaxAttempts(3),
	}
	custom := endpoint != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	if custom {
		// Instance metadata only means something on AWS itself; elsewhere
		// asking for it would send a request off to a link-local address.
		opts = append(opts, config.WithEC2IMDSClientEnableState(imds.ClientDisabled))
	}
	ac, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("store/s3: reading the AWS configuration: %w", err)
	}
	if endpoint == "" && ac.BaseEndpoint != nil {
		endpoint = *ac.BaseEndpoint
	}
	if ac.Region == "" {
		ac.Region = "us-east-1" // what S3-compatible servers take by default
	}
	pathStyle := endpoint != "" && !strings.Contains(endpoint, "amazonaws.com")
	if cfg.PathStyle != nil {
		pathStyle = *cfg.PathStyle
	}
	api := awss3.NewFromConfig(ac, func(o *awss3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
		// Checksums only where S3 requires them: many S3-compatible servers
		// refuse the trailing checksums the SDK would add to every upload.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	if endpoint == "" {
		endpoint = "https://s3." + ac.Region + ".amazonaws.com"
	}
	c := &Client{api: api, endpoint: endpoint, timeout: cfg.Timeout, creds: "the AWS environment and files"}
	if ac.Credentials != nil {
		if cr, err := ac.Credentials.Retrieve(ctx); err == nil {
			c.creds = cr.Source
		}
	}
	return c, nil
}

// Endpoint is the URL the client sends requests to.
func (c *Client) Endpoint() string { return c.endpoint }

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// httpClient bounds connecting and waiting for an answer's headers, so a
// dead or frozen endpoint fails a call instead of hanging it; transfers
// are bounded by idle timers (idleReader).
func httpClient(timeout time.Duration) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = min(timeout, 10*time.Second) }).
		WithTransportOptions(func(t *http.Transport) {
			t.ResponseHeaderTimeout = timeout
			t.MaxIdleConnsPerHost = 64
		})
}

// call returns a context for one request that is not a transfer.
func (c *Client) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

// isNotFound reports whether err says the key (or bucket) does not exist.
func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

// isPrecondition reports whether err is a failed If-None-Match.
func isPrecondition(err error) bool {
	var re *smithyhttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusPreconditionFailed
}

// wrap turns an S3 error into the store's: ErrNotFound for a missing key,
// ErrUnavailable (naming the endpoint) when the endpoint could not be
// reached or failed on its side, and otherwise an error naming the call
// and key.
func (c *Client) wrap(op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case isNotFound(err):
		return fmt.Errorf("%w: %s", store.ErrNotFound, key)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("store/s3: %s %s: %w", op, key, err)
	case unavailable(err):
		return fmt.Errorf("%w: %s %s at %s: %v", store.ErrUnavailable, op, key, c.endpoint, cause(err))
	}
	return fmt.Errorf("store/s3: %s %s at %s: %w", op, key, c.endpoint, err)
}

// unavailable reports whether err means the endpoint is down, unreachable,
// slow or failing on its side (5xx), rather than refusing the request.
func unavailable(err error) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() != 0 { // 0: no answer came
		return re.HTTPStatusCode() >= 500
	}
	var ne net.Error
	var oe *net.OpError
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.As(err, &oe) ||
		errors.Is(err, errIdle) || strings.Contains(err.Error(), "connection refused") ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "EOF")
}

// cause is the innermost useful part of an SDK error, without the
// operation wrapping the SDK adds (which repeats what wrap says).
func cause(err error) error {
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}
