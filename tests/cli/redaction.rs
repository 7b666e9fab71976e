//! Planted secrets of every kind, in user text, tool input, tool output and file contents, in
//! both native formats: relayed both ways and exported, with 0 secrets left; and a corpus of
//! what sessions are full of (SHAs, UUIDs, images, lock-file hashes, code) with 0 false positives.

use crate::common::TestEnv;
use serde_json::{Value, json};

#[path = "redaction_corpus.rs"]
mod corpus;

/// (kind, secret, how it appears in text). Fake values with the real shapes.
fn secrets() -> Vec<(&'static str, String, String)> {
    let s = |kind: &'static str, secret: &str, text: &str| {
        (kind, secret.to_string(), text.replace("{}", secret))
    };
    vec![
        s(
            "aws_access_key",
            "AKIA2E0A8F3B244C9986",
            "aws_access_key_id = {}",
        ),
        s(
            "aws_secret_key",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8sT4uV1w",
            "aws_secret_access_key={}",
        ),
        s(
            "github_token",
            "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
            "git clone https://github.com/x/y using {}",
        ),
        s(
            "github_token",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV0123",
            "GH={}",
        ),
        s(
            "gitlab_token",
            "glpat-Ab3dEf6hIj9kLm2nOp5q",
            "my gitlab token is {} ok",
        ),
        s(
            "openai_key",
            "sk-proj-Zx8vQ2mN5bT7kL1pR4wY9cF3hJ6dS0aG2eU8iO5tB7nM1vX4",
            "OpenAI: {}",
        ),
        s(
            "openai_key",
            "sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKl",
            "old key {}",
        ),
        s(
            "anthropic_key",
            "sk-ant-api03-AbCdEf0123456789_GhIjKlMnOpQrStUvWxYz-0123456789AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEf-AA",
            "key={} end",
        ),
        s(
            "slack_token",
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "slack {}",
        ),
        s(
            "slack_webhook",
            "https://hooks.slack.com/services/T0ABCDEFG/B0HIJKLMN/AbCdEfGhIjKlMnOpQrStUvWx",
            "post to {}",
        ),
        s(
            "google_api_key",
            "AIzaSyD3x4mpl3K3y0123456789abcdefghijkl",
            "maps key {}",
        ),
        s(
            "stripe_key",
            "sk_live_51H8xYzAbCdEfGhIjKlMnOpQr",
            "STRIPE_KEY={}",
        ),
        s(
            "jwt",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
            "cookie: session={}",
        ),
        s(
            "private_key",
            "MIIEpAIBAAKCAQEA1x2y3z4AbCdEfGhIjKlMnOpQrStUvWxYz",
            "-----BEGIN RSA PRIVATE KEY-----\n{}\nQrStUvWxYz0123456789\n-----END RSA PRIVATE KEY-----",
        ),
        s(
            "url_credentials",
            "Sup3rS3cret!x",
            "DATABASE_URL=postgres://admin:{}@db.example.com:5432/prod",
        ),
        s(
            "assignment",
            "correct-horse-battery-staple",
            "DB_PASSWORD={}",
        ),
        s(
            "assignment",
            "9f8e7d6c5b4a39281706zz",
            "client_secret: \"{}\"",
        ),
        s("assignment", "Zm9vYmFyYmF6cXV4MTIz", "export API_TOKEN={}"),
        s(
            "high_entropy_value",
            "q8Zt3LmP0xR7vN2kW9yB4cF6",
            "SIGNING_SALT={}",
        ),
        s(
            "bearer_token",
            "abcdef0123456789ABCDEFxyz",
            "curl -H 'Authorization: Bearer {}' https://api",
        ),
        // Package registries.
        s(
            "npm_token",
            "npm_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d",
            "echo //registry.npmjs.org/:_authToken={} > ~/.npmrc",
        ),
        s(
            "pypi_token",
            "pypi-AgEIcHlwaS5vcmcLioDnkHIfxIq2HZt-PlJhx2jIclHkCiHp6bR1IqfEouHgxzNNAL5wIScGebc",
            "twine upload -u __token__ -p {} dist/*",
        ),
        s(
            "rubygems_key",
            "rubygems_6f7e3dfc967a64cb14028d512c9791e558e08baa7196b50a",
            ":rubygems_api_key: {}",
        ),
        s(
            "nuget_key",
            "oy2yf4r6mp6afqfjzczbttof7jyu5jsjc616i76bofbcix",
            "dotnet nuget push pkg.nupkg -k {} -s https://api.nuget.org/v3/index.json",
        ),
        s(
            "crates_io_token",
            "cio9gy1CJdObOIRpFqaDZeV7G5IfQHeVVEq",
            "cargo login {}",
        ),
        s(
            "dockerhub_token",
            "dckr_pat_jHEAD6-Wj9KfzjsQGMrb9h_ImB_",
            "docker hub token {} for CI",
        ),
        s(
            "jfrog_token",
            "AKCpsTHsDDDXh5Jmtf7EbsDe0G9Cryn687neLfjVHq8xiM0OGr4hTxoF54Fzbka8FRCztUjAw",
            "artifactory key {}",
        ),
        // Cloud providers.
        s(
            "azure_storage_key",
            "YgCfrL1spNxnyVmihA/2O76UMFxFkM/R5Kjp1vRt+1fjORS/6ilI8ihN5KXSc7Tvo/hBKqFYY/kv5ZJr3J1TWD==",
            "DefaultEndpointsProtocol=https;AccountName=relaystore;AccountKey={};EndpointSuffix=core.windows.net",
        ),
        s(
            "azure_sas",
            "jfljoQo%2BF1LlqsajAIxNKu8iS2G8NPRVdD53X83R%3D",
            "https://relaystore.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01T00:00:00Z&spr=https&sig={}",
        ),
        s(
            "azure_client_secret",
            "ZJz8Q~YZYn9ZhyiA4uoRgnatmUdjAWtGSU8po_79",
            "az login --service-principal -u 4f1c2b3a -t tenant --secret {}",
        ),
        s(
            "google_oauth",
            "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",
            "oauth client GOOGLE_CLIENT={}",
        ),
        s(
            "google_oauth",
            "ya29.S4-FvafhdZxEuhnbzs0z1wNiMg9aW37k5wCnHDepQHgI3HLBkbvHEzuPyXQEW88ad3DNBYjvsedonuSsddfrfifiUziXnFAAoeelK9mqmALOR2HcSGKgVP8K",
            "gcloud printed {}",
        ),
        s(
            "private_key",
            "f49yBVae2sKjh1Ri4bwvWLa4Sz8kP62tZkhQM1V9rMRdyC5ksV1UE4YHoDxz",
            r#"{"type": "service_account", "project_id": "relay-prod", "private_key": "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n"}"#,
        ),
        s(
            "digitalocean_token",
            "dop_v1_7c8af6666259bbc471fb3be24a0b80316f688d3e481a65c2011bef2c328a72c5",
            "doctl auth init -t {}",
        ),
        s(
            "heroku_key",
            "HRKU-AA5uVECweGThdgH9hmsOazM4n8PVGXpV9Wv4Esb7yeuCjVr5mXcj5RPD9oUs",
            "heroku key {}",
        ),
        s(
            "terraform_token",
            "nrKli1lHXoTlmM.atlasv1.kl=JwAryNzbi0hSQK=lb09rIFxUeuVaT5jpTFPWhLn=5drcFlCxvnNGdcmyHc7E4nSm",
            "credentials \"app.terraform.io\" { token = \"{}\" }",
        ),
        s(
            "databricks_token",
            "dapie90a88d519448fb2fc6791ce680ce2b2",
            "databricks configure with {}",
        ),
        // Code hosts and CI.
        s(
            "gitlab_token",
            "glrt-mGpb3EfKoNSvphIk7s4p",
            "gitlab-runner register --token {}",
        ),
        s(
            "atlassian_token",
            "ATATT3xFfGF0qL0KJFlK6CXzU6M98NdFQCyXYbTuEPP_IKBLhcuiS4hX4TnCt1RTrzJm8Iq0na0p-Yt1JoW56KTLTYXPa-W4MxMs3WDlQPFPA2bdgG-MN33X7TfS5biDm0VZty1_Z4RlvUOUjNwoLR1uLAy0xhnTf0baNaMYmbdzw-Isz0psundmjv_73hbP=47b85183",
            "jira api token {}",
        ),
        s(
            "atlassian_token",
            "ATBB258LewmCNybdo4zLW9cCdNppock7L2lu",
            "bitbucket app password {}",
        ),
        s(
            "ci_token",
            "bkua_378368f7e732d2e433ec56f24b1c71b106e934d2",
            "buildkite agent {}",
        ),
        // Chat.
        s(
            "slack_token",
            "xapp-1-A04TFJGVQ4K-8038528084148-b5b7a767c76fb008f86bebb2737f6a6f0fb23c6f5da2cec255404e4fb440034d",
            "socket mode with {}",
        ),
        s(
            "discord_webhook",
            "https://discord.com/api/webhooks/651505561304451669/jU2JgJngKtFI3OyV2dZAkg05rK_gqv81RKMGHZEM9YpvujA-C5Q52ryFlwRlOEVHzc0X",
            "notify {}",
        ),
        s(
            "discord_token",
            "MTE4Mzc0NjUyOTM4NDc1NjEwMg.GhT3xQ.B9t2039bicBTW5ZE9LFaez7770H2DCpYgojjHR",
            "bot.run('{}')",
        ),
        s(
            "telegram_bot_token",
            "1718002390:AAMqG3omjMyXHCabM6JOF8EFd0Nhcy-1kGD",
            "curl https://api.telegram.org/bot{}/getMe",
        ),
        // Payments.
        s(
            "stripe_key",
            "whsec_QB7xoFcSvTAxRzmaZsV2GenFmtX0moDo",
            "stripe listen prints {}",
        ),
        s(
            "square_token",
            "EAAAHLn-xC_1hsYgBds1ghxY5OokvQyx7eNWVQ4vnakJkS1pAWTN3lg8zV5yPU8d",
            "square access {}",
        ),
        s(
            "square_token",
            "sq0csp-0FZfWe7ihGyiRUIQfHOJMaidDn87XG3-q-xbMtEPO6U",
            "square oauth {}",
        ),
        s(
            "braintree_token",
            "access_token$production$f6mzkp0ec498uk1g$28263dfe574de739988b886e7577496a",
            "paypal {}",
        ),
        // Mail.
        s(
            "sendgrid_key",
            "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",
            "sendgrid {}",
        ),
        s(
            "mailgun_key",
            "key-2c8773e130f7eb19731662b5e803b61b",
            "mailgun api:{}",
        ),
        s(
            "mailchimp_key",
            "a4168160adb59261ff2d3c425c8d99d1-us14",
            "mailchimp {}",
        ),
        s(
            "postmark_token",
            "9bdd0b6c-c60d-5d32-cbe5-4014c2b54b95",
            "-H 'X-Postmark-Server-Token: {}'",
        ),
        s(
            "twilio_key",
            "SK523cf6941fa1c257c6f561c5cb347611",
            "twilio api key {}",
        ),
        // AI providers.
        s(
            "anthropic_key",
            "sk-ant-oat01-wD-G3SaoKfgFoeOASl1YCJlS24R5gA2q_yfHwuEHFhvTS0lzNrr_9EEa4rSMrsEQp2vt7ZAoLbU_AfhJMzoN5ouP47ULvjf-aDWFfV",
            "claude setup-token gave {}",
        ),
        s(
            "huggingface_token",
            "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",
            "huggingface-cli login --token {}",
        ),
        s(
            "groq_key",
            "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",
            "groq {}",
        ),
        s(
            "replicate_token",
            "r8_GQccOif7UuXUGfdWG5yP8Yib2eNUS0hmi4Fs9",
            "replicate {}",
        ),
        s(
            "xai_key",
            "xai-Z6YkRYU7oe1wNWqku5Nr50DjqG96EnLqNGpuxcmlzkO7rRu5ykYYqhXHdO2x93CJHLS45gqIO2zVZxqy",
            "grok {}",
        ),
        s(
            "perplexity_key",
            "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",
            "perplexity {}",
        ),
        // Secret stores.
        s(
            "vault_token",
            "hvs.d0d3mS8gBlKv3azKgaS_m_x-SHuKBD-vok_nPTmZYl2dVAMH2vWD6qeSPt5Pv74GDqQ7EyIMttFPSuEPyHnvnzXtsM",
            "vault login {}",
        ),
        s(
            "onepassword_token",
            "ops_eyJM3JznnJAX7ebZ3CL7csGZaF31DDxp63OHm1FZuG296c0xPbX+neGBuzSm6A8cVR06AxYpThGJWZhbj11THnCMZCY7Bvqiy8CsT07Lq8TDIWG2x9aJTFMP9+2kUtMXhkPrSbbAjLGmsDx5StAZvlMz/Bk4opH1Dr8/h97s+F/vauP7/L7V21jxUdcfQm9+seB1qRmUR8A",
            "op service account {}",
        ),
        s(
            "doppler_token",
            "dp.pt.sBvBqJd0ssw0FzvGr3GwnPFYhvmuTtiLOfYczUJ4zIK",
            "doppler {}",
        ),
        s(
            "age_secret_key",
            "AGE-SECRET-KEY-1TZ38AL3888EGWWFAE2PC6ZERH4E04M5ER5FK0MQHXTY5MVPWG6EAZZZ33Z",
            "# created: 2026-11-29\n{}",
        ),
        // Other services.
        s(
            "shopify_token",
            "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",
            "shopify {}",
        ),
        s(
            "linear_key",
            "lin_api_BKPL76dFKHc0hXZAKS6zCeaRyML8QjEXAJgfPEn5",
            "linear {}",
        ),
        s(
            "sentry_token",
            "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",
            "sentry-cli --auth-token {}",
        ),
        s(
            "newrelic_key",
            "NRAK-VODL29J2JR00PJBRSVKQ5GU34HJ",
            "newrelic {}",
        ),
        s(
            "datadog_key",
            "16f9386bd8773c9d51940ea4e095bd1d",
            "-e DD_API_KEY={} datadog/agent",
        ),
        s(
            "grafana_token",
            "glsa_a530DtAMq94F8epRyRTLoAtz4TFbY3pf_55bc509c",
            "grafana {}",
        ),
        s(
            "planetscale_token",
            "pscale_tkn_JxhvI3yvzPe9hB06wJpymDswpBcrQbvZjpTifmrI1Yi",
            "pscale {}",
        ),
        s(
            "saas_token",
            "PMAK-ee75bb6cc69f67e48eb7c643-28c0490c257a632b96292794c9bce4850b",
            "postman {}",
        ),
        s(
            "notion_token",
            "ntn_RZQSw5AbQTSDp2zw5Oglshr6MUoTRczcMkBmWtjyVcJtOO",
            "notion {}",
        ),
        s(
            "mapbox_token",
            "sk.eyJ1IjoiZGV2cmVsYXkiLCJhIjoiY2x4N2s5MDAwMDJxbzZ0In0.Rk3vQ9xZp2LmW8tYb5NcJg",
            "MAPBOX_ACCESS_TOKEN={}",
        ),
        // Credentials by their place.
        s(
            "basic_auth",
            "ZGVwbG95OlR2VktxZ1BGOUJGbVlJ",
            "curl -H \"Authorization: Basic {}\" https://ci.example.com",
        ),
        s(
            "basic_auth",
            "cmVsYXk6Ung4dWtRMmJwWjl3",
            r#"{"headers": {"Authorization": "Basic {}"}}"#,
        ),
        s(
            "bearer_token",
            "PbTlKGFkrddYsLVxvnNPWxTODVrVGEhfnZgB_2_u",
            r#"{"headers": {"Authorization": "Bearer {}"}}"#,
        ),
        s(
            "url_credentials",
            "Xk9fjSokiCOzf",
            "REDIS_URL=redis://:{}@cache.internal:6379/0",
        ),
        s(
            "url_credentials",
            "mongoPassWord",
            "mongodb+srv://app:{}@cluster0.ab1cd.mongodb.net/prod",
        ),
        s(
            "cli_password",
            "Tr0ub4dortMLO",
            "mysql -h db.internal -u root -p{} app < dump.sql",
        ),
        s(
            "cli_password",
            "dumpPassword",
            "mysqldump --password={} --all-databases",
        ),
        s(
            "cli_password",
            "sshPassWord",
            "sshpass -p '{}' ssh deploy@10.0.0.5",
        ),
        s(
            "cli_password",
            "curlpassword9",
            "curl -u deploy:{} https://ci.example.com/api",
        ),
        s(
            "cli_password",
            "pgpassword",
            "PGPASSWORD={} psql -h db.internal -U app",
        ),
        s(
            "connection_string",
            "AdoPassword",
            "Server=tcp:db.example.net,1433;Initial Catalog=app;User ID=app;Password={};Encrypt=True;",
        ),
        s(
            "sensitive_key",
            "lettersonly",
            r#"{"db": {"host": "db.internal", "password": "{}"}}"#,
        ),
        s(
            "sensitive_key",
            "two words here",
            r#"{"clientSecret": "{}"}"#,
        ),
    ]
}

/// Secrets that only structured tool input holds, under sensitive keys, with values no text
/// rule would know (letters only, spaces): (secret, key path).
fn structured_secrets() -> Value {
    json!({
        "url": "https://api.example.com/v1/deploy",
        "headers": {"Authorization": "Bearer Zq8RtY3pLm0vXw", "X-Api-Key": "apikeyvalue-structured", "Accept": "application/json"},
        "db": {"host": "db.internal", "user": "app", "password": "horsebatterystaple", "port": 5432, "ssl": true},
        "clientSecret": "structured client secret",
        "credentials": ["firstcredential", "secondcredential"],
    })
}

fn structured_values() -> Vec<String> {
    [
        "Zq8RtY3pLm0vXw",
        "apikeyvalue-structured",
        "horsebatterystaple",
        "structured client secret",
        "firstcredential",
        "secondcredential",
    ]
    .map(String::from)
    .to_vec()
}

/// Near misses in structured tool input: counts, flags, placeholders, tokenizer and paging
/// tokens, keys that merely contain a secret's name.
fn structured_innocents() -> Value {
    json!({
        "model": "claude-sonnet", "max_tokens": 4096, "tokens_used": "5120",
        "token_count": {"input": 120, "output": 40}, "input_tokens": 7,
        "secret_santa": "Alice", "secret_name": "db-creds", "is_secret": "no", "secret": true,
        "password": "", "passwordless": "yes", "api_key": "${OPENAI_API_KEY}",
        "client_secret": "<your-client-secret>", "auth_token": "***", "refresh_token": "changeme",
        "token": "Hello", "eos_token": "</s>", "pad_token": "[PAD]",
        "next_page_token": "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA4", "credentials": "include",
        "primary_key": "id", "cache_key": "v1-deps-4f3c2b1a", "access_key_id": "AKIDEXAMPLE",
        "env": {"PWD": "/home/dev/projects/redact", "OLDPWD": "/home/dev"},
        "headers": {"Authorization": "Bearer ${TOKEN}", "Accept": "application/json"},
    })
}

/// Text that must come through untouched.
fn innocents() -> Vec<String> {
    vec![
        "commit 4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b (HEAD -> main), parent 4f3c2b1".into(),
        "session 0199a000-0000-7000-8000-00000000e0e0 and 771ce1df-ae7a-4516-8192-f08c38166af2".into(),
        "![logo](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)".into(),
        "\"integrity\": \"sha512-Q6Q2xP4Zp2+Ql8m6mWbS1V6Xo5qYcXzv1uJ6tG0sHqB8x3Y2K5h9Jq7uS0l8pK4f2Z1QnE9wVbR6cT3yD0aLmA==\",".into(),
        "checksum = \"b8e2a4d6c8f0e2a4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6c8e0b2d4f6a8c0e2\"".into(),
        "github.com/pkg/errors v0.9.1 h1:FEBLx1zS214owpjy7qsBeixbURkuhQAwrK5UwLGTwt4=".into(),
        "let password = read_password(); if token_count > max_tokens { retry(); }".into(),
        "\"usage\":{\"input_tokens\":1200,\"output_tokens\":40,\"cache_read_input_tokens\":0}".into(),
        "The password must be at least 12 characters; never log it.".into(),
        "GIT_COMMIT=4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b".into(),
        "BUILD_ID=0199a000-0000-7000-8000-00000000e0e0".into(),
        "secret = os.environ[\"APP_SECRET\"]  # read from the environment".into(),
        "api_key: ${OPENAI_API_KEY}".into(),
        // Near misses of the vendor prefixes.
        "max_tokens: 4096, \"token_count\": {\"input\": 120, \"output\": 40}, tokens_used=5120".into(),
        "OpenAI keys start with sk- and scikit-learn is sk-learn; neither is a key here.".into(),
        "from huggingface_hub import hf_hub_download; hf_hub_download(repo_id=\"bert-base-uncased\", filename=\"config.json\")".into(),
        "See SG.1 and SG.2 in the style guide before naming things.".into(),
        "https://cdn.example.com/avatar.png?size=64&sig=1a2b3c4d5e6f7a8b".into(),
        "npm_config_cache=/home/dev/.npm npm_package_version=1.2.3".into(),
        "cache hit: node-cache-key-d41d8cd98f00b204e9800998ecf8427e".into(),
        "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC".into(),
        "data:application/octet-stream;base64,AAAAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+/EAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==".into(),
        "dapibus lectus; SKU SK-1042; ticket AKS-2231; 1700000000:AAA".into(),
        "Java: MessageDispatcherImpl.handle(QueueMessage.java:42) at NotificationServiceImplTest.assert.someVeryLongMethodNameForTesting".into(),
        // Credentials' places without a credential.
        "mysql -h 127.0.0.1 -P 3306 -u root -p mydb".into(),
        "cat token.txt | docker login --password-stdin -u bot registry.example.com".into(),
        "curl -u \"$CI_USER:$CI_TOKEN\" https://ci.example.com/api".into(),
        "postgres://user:password@localhost:5432/app and amqp://<user>:<pass>@broker:5672".into(),
        "Authorization: Bearer <token>".into(),
        "{\"token\": \" Hello\", \"logprob\": -0.31}, {\"eos_token\": \"</s>\", \"pad_token\": \"[PAD]\"}".into(),
        "{\"secret_santa\": \"Alice\", \"password\": \"\", \"client_secret\": \"<your-client-secret>\"}".into(),
        "Server=localhost;Database=app;Trusted_Connection=True;".into(),
        "cd $PWD && OLDPWD=/home/dev make".into(),
    ]
}

/// A Claude Code session holding `texts` in every place one can: a compaction summary, the
/// user's prompt, reasoning, a Write's content, a Bash command, tool outputs, the answer, and a
/// call whose input is nested JSON (`structured`, with the texts deep inside).
fn claude_session(env: &TestEnv, texts: &[String], structured: &Value, name: &str) -> String {
    let id = format!("5d0c3a1e-7b2f-4e8a-9c6d-0000000000{name}");
    let cwd = "/home/dev/projects/redact";
    let dir = env.claude_home().join("projects/-home-dev-projects-redact");
    std::fs::create_dir_all(&dir).unwrap();
    let mut lines = Vec::new();
    let mut parent: Value = Value::Null;
    let mut n = 0;
    let mut push = |typ: &str, message: Value, extra: Value| {
        n += 1;
        let uuid = format!("u{n}");
        let mut l = json!({"parentUuid": parent, "isSidechain": false, "type": typ, "message": message,
            "uuid": uuid, "timestamp": format!("2026-11-29T12:{:02}:{:02}.000Z", n / 60, n % 60),
            "userType": "external", "entrypoint": "cli", "cwd": cwd, "sessionId": id, "version": "2.1.332"});
        if let (Value::Object(a), Value::Object(b)) = (&mut l, extra) {
            a.extend(b);
        }
        if typ == "system" {
            l.as_object_mut().unwrap().remove("message");
        }
        lines.push(l.to_string());
        parent = json!(uuid);
    };
    let all = texts.join("\n");
    let mut nested = structured.clone();
    nested["body"] = json!({"release": {"notes": all}});
    push(
        "system",
        Value::Null,
        json!({"subtype": "compact_boundary", "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 160000}}),
    );
    push(
        "user",
        json!({"role": "user", "content": format!("This session is being continued from a previous conversation. Summary:\n{all}")}),
        json!({"isCompactSummary": true}),
    );
    push(
        "user",
        json!({"role": "user", "content": format!("Set up the deploy. {all}")}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m0", "type": "message", "role": "assistant", "model": "x", "content": [
        {"type": "thinking", "thinking": format!("The user pasted: {all}"), "signature": "c2lnbmF0dXJl"}]}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m1", "type": "message", "role": "assistant", "model": "x", "content": [
        {"type": "tool_use", "id": "toolu_w", "name": "Write", "input": {"file_path": "/home/dev/projects/redact/.env", "content": all}}]}),
        json!({}),
    );
    push(
        "user",
        json!({"role": "user", "content": [{"tool_use_id": "toolu_w", "type": "tool_result", "content": "File created"}]}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m2", "type": "message", "role": "assistant", "model": "x", "content": [
        {"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": {"command": format!("cat .env # {}", texts[0])}}]}),
        json!({}),
    );
    push(
        "user",
        json!({"role": "user", "content": [{"tool_use_id": "toolu_b", "type": "tool_result", "content": [{"type": "text", "text": all}]}]}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m2b", "type": "message", "role": "assistant", "model": "x", "content": [
        {"type": "tool_use", "id": "toolu_h", "name": "mcp__http__request", "input": nested}]}),
        json!({}),
    );
    push(
        "user",
        json!({"role": "user", "content": [{"tool_use_id": "toolu_h", "type": "tool_result", "content": "HTTP 200"}]}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m3", "type": "message", "role": "assistant", "model": "x", "content": [
        {"type": "text", "text": format!("The .env holds: {all}")}]}),
        json!({}),
    );
    push(
        "user",
        json!({"role": "user", "content": "Thanks, now deploy."}),
        json!({}),
    );
    push(
        "assistant",
        json!({"id": "m4", "type": "message", "role": "assistant", "model": "x", "content": [{"type": "text", "text": "Deployed."}]}),
        json!({}),
    );
    std::fs::write(dir.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
    id
}

/// The same places in a pi session: a compaction, the prompt, thinking, a write, a bash call
/// and its output, a tool with nested JSON arguments, the answer, and the title.
fn pi_session(env: &TestEnv, texts: &[String], structured: &Value, name: &str) -> String {
    let id = format!("0199f0aa-0000-7000-8000-0000000000{name}");
    let dir = env.home("pi").join("sessions/--home-dev-projects-redact--");
    std::fs::create_dir_all(&dir).unwrap();
    let all = texts.join("\n");
    let mut nested = structured.clone();
    nested["body"] = json!({"release": {"notes": all}});
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": id, "timestamp": "2026-11-29T11:00:00.000Z", "cwd": "/home/dev/projects/redact"}),
    ];
    let usage =
        json!({"input": 10, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 11});
    let entries = [
        json!({"type": "compaction", "summary": format!("Summary of the earlier work:\n{all}"), "firstKeptEntryId": "e0000002", "tokensBefore": 160000}),
        json!({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": format!("Set up the deploy. {all}")}]}}),
        json!({"type": "message", "message": {"role": "assistant", "usage": usage, "content": [
            {"type": "thinking", "thinking": format!("The user pasted: {all}")},
            {"type": "toolCall", "id": "c1", "name": "write", "arguments": {"path": "/home/dev/projects/redact/.env", "content": all}}]}}),
        json!({"type": "message", "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "write", "content": [{"type": "text", "text": "Wrote .env"}], "isError": false}}),
        json!({"type": "message", "message": {"role": "assistant", "usage": usage, "content": [
            {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": format!("cat .env # {}", texts[0])}}]}}),
        json!({"type": "message", "message": {"role": "toolResult", "toolCallId": "c2", "toolName": "bash", "content": [{"type": "text", "text": all}], "isError": false}}),
        json!({"type": "message", "message": {"role": "assistant", "usage": usage, "content": [
            {"type": "toolCall", "id": "c3", "name": "http_request", "arguments": nested}]}}),
        json!({"type": "message", "message": {"role": "toolResult", "toolCallId": "c3", "toolName": "http_request", "content": [{"type": "text", "text": "HTTP 200"}], "isError": false}}),
        json!({"type": "message", "message": {"role": "assistant", "usage": usage, "content": [{"type": "text", "text": format!("The .env holds: {all}")}]}}),
        json!({"type": "message", "message": {"role": "user", "content": "Thanks, now deploy."}}),
        json!({"type": "message", "message": {"role": "assistant", "usage": usage, "content": [{"type": "text", "text": "Deployed."}]}}),
        json!({"type": "session_info", "name": format!("Deploy with {}", texts[0])}),
    ];
    for (n, mut e) in entries.into_iter().enumerate() {
        e["id"] = json!(format!("e{n:07}"));
        e["parentId"] = if n == 0 {
            Value::Null
        } else {
            json!(format!("e{:07}", n - 1))
        };
        e["timestamp"] = json!(format!("2026-11-29T11:00:{:02}.000Z", n + 1));
        lines.push(e);
    }
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(
        dir.join(format!("2026-11-29T11-00-00-000Z_{id}.jsonl")),
        text.join("\n") + "\n",
    )
    .unwrap();
    id
}

/// The same places in a Codex rollout: a compaction, the prompt (item and event), reasoning, a
/// shell call, its output, an apply_patch, a function call with nested JSON arguments, the answer.
fn codex_session(env: &TestEnv, texts: &[String], structured: &Value, name: &str) -> String {
    let id = format!("0199f000-0000-7000-8000-0000000000{name}");
    let dir = env.codex_home().join("sessions/2026/11/29");
    std::fs::create_dir_all(&dir).unwrap();
    let all = texts.join("\n");
    let mut nested = structured.clone();
    nested["body"] = json!({"release": {"notes": all}});
    let mut lines = vec![
        json!({"timestamp": "2026-11-29T10:00:00.000Z", "type": "session_meta", "payload": {"id": id, "timestamp": "2026-11-29T10:00:00.000Z", "cwd": "/home/dev/projects/redact", "originator": "codex_cli_rs", "cli_version": "0.60.0", "source": "cli"}}),
    ];
    let mut item = |t: &str, p: Value| {
        lines.push(json!({"timestamp": "2026-11-29T10:00:01.000Z", "type": t, "payload": p}))
    };
    item(
        "compacted",
        json!({"message": format!("Summary of the earlier work:\n{all}"), "replacement_history": []}),
    );
    item(
        "response_item",
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("Set up the deploy. {all}")}]}),
    );
    item(
        "event_msg",
        json!({"type": "user_message", "message": format!("Set up the deploy. {all}")}),
    );
    item(
        "response_item",
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": format!("The user pasted: {all}")}], "encrypted_content": null}),
    );
    item(
        "response_item",
        json!({"type": "function_call", "name": "shell", "arguments": json!({"command": ["bash", "-lc", format!("cat > .env <<EOF\n{all}\nEOF")]}).to_string(), "call_id": "c1"}),
    );
    item(
        "response_item",
        json!({"type": "function_call_output", "call_id": "c1", "output": json!({"output": all, "metadata": {"exit_code": 0}}).to_string()}),
    );
    item(
        "response_item",
        json!({"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": format!("*** Begin Patch\n*** Add File: config.env\n+{}\n*** End Patch\n", texts.join("\n+"))}),
    );
    item(
        "response_item",
        json!({"type": "custom_tool_call_output", "call_id": "c2", "output": "Exit code: 0\nOutput:\nSuccess."}),
    );
    item(
        "response_item",
        json!({"type": "function_call", "name": "http_request", "arguments": nested.to_string(), "call_id": "c3"}),
    );
    item(
        "response_item",
        json!({"type": "function_call_output", "call_id": "c3", "output": "HTTP 200"}),
    );
    item(
        "response_item",
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("Saved: {all}")}]}),
    );
    item(
        "response_item",
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks, now deploy."}]}),
    );
    item(
        "event_msg",
        json!({"type": "user_message", "message": "Thanks, now deploy."}),
    );
    item(
        "response_item",
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Deployed."}]}),
    );
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(
        dir.join(format!("rollout-2026-11-29T10-00-00-{id}.jsonl")),
        text.join("\n") + "\n",
    )
    .unwrap();
    id
}

/// Every file under the environment that is not in `before` (what commands wrote: sessions,
/// indexes, the ledger, caches), as text.
fn files_written(env: &TestEnv, before: &std::collections::BTreeSet<std::path::PathBuf>) -> String {
    let mut out = String::new();
    for e in walkdir::WalkDir::new(env.dir.path())
        .into_iter()
        .filter_map(|e| e.ok())
    {
        if e.file_type().is_file() && !before.contains(e.path()) {
            let bytes = std::fs::read(e.path()).unwrap();
            out.push_str(&format!("\n== {}\n", e.path().display()));
            out.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    out
}

fn all_files(env: &TestEnv) -> std::collections::BTreeSet<std::path::PathBuf> {
    walkdir::WalkDir::new(env.dir.path())
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().to_path_buf())
        .collect()
}

/// Relays each session to both agents (one of them is its own: a fork) with `title`, exports
/// it in both formats, and returns everything written (files, exports, reports) and the reports.
fn relay_everything(
    env: &TestEnv,
    ids: &[String],
    proj: &str,
    title: &str,
) -> (String, Vec<Value>) {
    let before = all_files(env);
    let mut written = String::new();
    let mut reports = Vec::new();
    for id in ids {
        for to in session_relay::adapters::names() {
            let out = env.ok(&[
                "relay", id, "--to", to, "--cwd", proj, "--title", title, "--json",
            ]);
            let r: Value = serde_json::from_str(&out).unwrap();
            written.push_str(&out);
            written
                .push_str(&std::fs::read_to_string(r["target"]["path"].as_str().unwrap()).unwrap());
            reports.push(r);
        }
        for format in ["jsonl", "markdown"] {
            written.push_str(&env.ok(&["export", id, "--format", format]));
        }
    }
    written.push_str(&files_written(env, &before));
    (written, reports)
}

#[test]
fn every_planted_secret_is_masked_in_both_directions() {
    let env = TestEnv::empty();
    let proj = env.project();
    let planted = secrets();
    let texts: Vec<String> = planted.iter().map(|p| p.2.clone()).collect();
    let all = texts.join("\n");
    assert!(all.chars().count() < 8000, "tool outputs would be cut");
    let ids = vec![
        claude_session(&env, &texts, &structured_secrets(), "01"),
        codex_session(&env, &texts, &structured_secrets(), "02"),
        copilot_session(&env, &texts, &structured_secrets(), "03"),
    ];
    let before = env.snapshot_stores();
    let title = format!("deploy {}", all.replace('\n', " "));
    let (written, reports) = relay_everything(&env, &ids, &proj, &title);
    let mut leaks = Vec::new();
    for (kind, secret, _) in &planted {
        if written.contains(secret.as_str()) {
            leaks.push(format!("{kind}: {secret}"));
        }
    }
    for secret in structured_values() {
        if written.contains(secret.as_str()) {
            leaks.push(format!("sensitive_key: {secret}"));
        }
    }
    assert!(leaks.is_empty(), "secrets left:\n{}", leaks.join("\n"));
    // Every kind was found and counted in every relay.
    for r in &reports {
        let counts = &r["redactions"];
        for (kind, _, _) in &planted {
            assert!(
                counts[kind].as_u64().unwrap_or(0) > 0,
                "{kind} not counted: {counts}"
            );
        }
        assert!(
            r["title"]
                .as_str()
                .unwrap()
                .contains("[REDACTED:npm_token]")
        );
    }
    assert!(written.contains("[REDACTED:openai_key]"));
    assert!(written.contains("Bearer [REDACTED:sensitive_key]"));
    // The sources are untouched and still hold the secrets (nothing is rewritten in place).
    let after = env.snapshot_stores();
    for (path, hash) in &before {
        assert_eq!(after.get(path), Some(hash), "{} changed", path.display());
    }
}

#[test]
fn what_sessions_are_full_of_is_not_masked() {
    let env = TestEnv::empty();
    let proj = env.project();
    let texts = innocents();
    let ids = vec![
        claude_session(&env, &texts, &structured_innocents(), "03"),
        codex_session(&env, &texts, &structured_innocents(), "04"),
    ];
    let title = format!("deploy {}", texts.join(" "));
    let (written, reports) = relay_everything(&env, &ids, &proj, &title);
    assert!(
        !written.contains("[REDACTED"),
        "false positive:\n{}",
        written
            .lines()
            .filter(|l| l.contains("[REDACTED"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    for r in &reports {
        assert_eq!(r["redactions"], json!({}), "false positive counted");
    }
    for t in &texts {
        // JSON escaping aside, each innocent line survives verbatim somewhere.
        let escaped = serde_json::to_string(t).unwrap();
        let escaped = &escaped[1..escaped.len() - 1];
        assert!(
            written.contains(t.as_str()) || written.contains(escaped),
            "altered: {t}"
        );
    }
}

/// Secrets that a reader's cut (long tool outputs keep their head and tail) splits: `k`
/// characters before the head's end, `k` after the tail's start.
fn cut_outputs() -> (Vec<String>, Vec<String>) {
    let secrets: Vec<String> = [
        "npm_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d",
        "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R",
        "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",
        "sk-ant-api03-AbCdEf0123456789_GhIjKlMnOpQrStUvWxYz-0123456789AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEf-AA",
        "xapp-1-A04TFJGVQ4K-8038528084148-b5b7a767c76fb008f86bebb2737f6a6f0fb23c6f5da2cec255404e4fb440034d",
    ]
    .map(String::from)
    .to_vec();
    // The readers keep 8000 characters: the first 5333 and the last 2667.
    let (head, tail, n) = (5333, 2667, 12_000);
    let filler = |len: usize| -> String {
        let mut f = String::new();
        let mut i = 0;
        while f.len() < len {
            f.push_str(&format!(
                "   Compiling crate-{i} v0.1.{i} (/home/dev/src)\n"
            ));
            i += 1;
        }
        f.truncate(len);
        f
    };
    let mut outputs = Vec::new();
    for s in &secrets {
        for k in [8, 12, 20, 30] {
            // ... head | cut ... | tail ...
            let a = head - k;
            let b = n - tail - (s.len() - k);
            let mut o = filler(a - 1);
            o.push(' ');
            o.push_str(s);
            o.push(' ');
            o.push_str(&filler(b - o.len() - 1));
            o.push(' ');
            o.push_str(s);
            o.push(' ');
            o.push_str(&filler(n - o.len()));
            assert_eq!(o.len(), n);
            outputs.push(o);
        }
    }
    (secrets, outputs)
}

#[test]
fn a_secret_cut_by_truncation_leaves_no_piece() {
    let env = TestEnv::empty();
    let proj = env.project();
    let (secrets, outputs) = cut_outputs();
    // Claude: one Bash call per output.
    let id = "5d0c3a1e-7b2f-4e8a-9c6d-0000000000c1";
    let dir = env.claude_home().join("projects/-home-dev-projects-redact");
    std::fs::create_dir_all(&dir).unwrap();
    let mut lines = Vec::new();
    let mut parent = Value::Null;
    let mut push = |n: usize, typ: &str, message: Value| {
        let uuid = format!("u{n}");
        lines.push(
            json!({"parentUuid": parent, "isSidechain": false, "type": typ, "message": message,
            "uuid": uuid, "timestamp": format!("2026-11-29T12:{:02}:{:02}.000Z", n / 60, n % 60),
            "cwd": "/home/dev/projects/redact", "sessionId": id, "version": "2.1.332"})
            .to_string(),
        );
        parent = json!(uuid);
    };
    push(
        0,
        "user",
        json!({"role": "user", "content": "Build everything."}),
    );
    for (i, o) in outputs.iter().enumerate() {
        let call = format!("toolu_{i}");
        push(
            2 * i + 1,
            "assistant",
            json!({"id": format!("m{i}"), "type": "message", "role": "assistant", "model": "x", "content": [
            {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": format!("make step-{i}")}}]}),
        );
        push(
            2 * i + 2,
            "user",
            json!({"role": "user", "content": [{"tool_use_id": call, "type": "tool_result", "content": o}]}),
        );
    }
    push(
        999,
        "assistant",
        json!({"id": "mz", "type": "message", "role": "assistant", "model": "x", "content": [{"type": "text", "text": "Built."}]}),
    );
    std::fs::write(dir.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
    // Codex: one shell call per output.
    let cid = "0199f000-0000-7000-8000-0000000000c2";
    let cdir = env.codex_home().join("sessions/2026/11/29");
    std::fs::create_dir_all(&cdir).unwrap();
    let mut c = vec![
        json!({"timestamp": "2026-11-29T10:00:00.000Z", "type": "session_meta", "payload": {"id": cid, "timestamp": "2026-11-29T10:00:00.000Z", "cwd": "/home/dev/projects/redact", "originator": "codex_cli_rs", "cli_version": "0.60.0", "source": "cli"}}),
        json!({"timestamp": "2026-11-29T10:00:01.000Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Build everything."}]}}),
    ];
    for (i, o) in outputs.iter().enumerate() {
        c.push(json!({"timestamp": "2026-11-29T10:00:02.000Z", "type": "response_item", "payload": {"type": "function_call", "name": "shell", "arguments": json!({"command": ["bash", "-lc", format!("make step-{i}")]}).to_string(), "call_id": format!("c{i}")}}));
        c.push(json!({"timestamp": "2026-11-29T10:00:03.000Z", "type": "response_item", "payload": {"type": "function_call_output", "call_id": format!("c{i}"), "output": json!({"output": o, "metadata": {"exit_code": 0}}).to_string()}}));
    }
    c.push(json!({"timestamp": "2026-11-29T10:00:04.000Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Built."}]}}));
    let text: Vec<String> = c.iter().map(Value::to_string).collect();
    std::fs::write(
        cdir.join(format!("rollout-2026-11-29T10-00-00-{cid}.jsonl")),
        text.join("\n") + "\n",
    )
    .unwrap();

    let before = all_files(&env);
    let mut written = String::new();
    let mut cut = 0;
    for src in [id, cid] {
        for to in ["claude", "codex"] {
            // The default budget keeps outputs as the reader cut them; a small one trims them
            // again (after redaction).
            for budget in [None, Some("5000")] {
                let mut args = vec![
                    "relay", src, "--to", to, "--cwd", &proj, "--force", "--json",
                ];
                if let Some(b) = budget {
                    args.extend(["--budget", b]);
                }
                let r: Value = serde_json::from_str(&env.ok(&args)).unwrap();
                cut += r["redactions"]["cut_fragment"].as_u64().unwrap_or(0);
                if budget.is_some() {
                    assert!(
                        r["fit"]["tool_outputs_trimmed"].as_u64().unwrap() > 0,
                        "{r}"
                    );
                }
            }
        }
    }
    written.push_str(&files_written(&env, &before));
    let mut leaks = Vec::new();
    for s in &secrets {
        let chars: Vec<char> = s.chars().collect();
        for w in chars.windows(8) {
            let w: String = w.iter().collect();
            if written.contains(&w) {
                leaks.push(format!("{w} (of {s})"));
            }
        }
    }
    assert!(leaks.is_empty(), "pieces left:\n{}", leaks.join("\n"));
    assert!(cut > 0, "no cut fragment was masked");
}

#[test]
fn a_given_title_is_masked_unless_told_not_to() {
    let env = TestEnv::empty();
    let proj = env.project();
    let id = claude_session(&env, &["nothing secret here".to_string()], &json!({}), "06");
    let title = "deploy with ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";
    let args = [
        "relay",
        &id,
        "--to",
        "codex",
        "--cwd",
        &proj,
        "--title",
        title,
        "--dry-run",
        "--json",
    ];
    let r: Value = serde_json::from_str(&env.ok(&args)).unwrap();
    assert_eq!(r["title"], "deploy with [REDACTED:github_token]");
    assert_eq!(r["redactions"], json!({"github_token": 1}));
    let mut raw = args.to_vec();
    raw.push("--no-redact");
    let r: Value = serde_json::from_str(&env.ok(&raw)).unwrap();
    assert_eq!(r["title"], title);
    assert_eq!(r["redactions"], Value::Null);
}

#[test]
fn no_redact_warns_and_config_extends_the_rules() {
    let env = TestEnv::empty();
    let proj = env.project();
    let texts = vec!["internal ticket token ACME-INTERNAL-7f3a9c and key ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R".to_string()];
    let id = claude_session(&env, &texts, &json!({}), "05");
    let out = env
        .cmd()
        .args(["export", &id, "--no-redact"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: --no-redact"));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R")
    );
    let cfg = env.dir.path().join("c.yaml");
    std::fs::write(
        &cfg,
        "redaction:\n  extra_patterns:\n    - name: acme_ticket\n      regex: 'ACME-INTERNAL-(?P<secret>[0-9a-f]{6})'\n  allow:\n    - ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R\n",
    )
    .unwrap();
    let c = cfg.to_str().unwrap();
    let exported = env.ok(&["--config", c, "export", &id]);
    assert!(
        exported.contains("ACME-INTERNAL-[REDACTED:acme_ticket]"),
        "{exported}"
    );
    assert!(
        exported.contains("ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R"),
        "allow-listed value kept"
    );
    let r: Value = serde_json::from_str(&env.ok(&[
        "--config",
        c,
        "relay",
        &id,
        "--to",
        "codex",
        "--cwd",
        &proj,
        "--dry-run",
        "--json",
    ]))
    .unwrap();
    // The compaction summary, user text, reasoning, Write content, Bash command, its output,
    // the nested JSON input, the answer, and the title.
    assert_eq!(r["redactions"]["acme_ticket"], 9);
    let dry = env.ok(&["relay", &id, "--to", "codex", "--cwd", &proj, "--dry-run"]);
    assert!(
        dry.contains("secrets    9 masked (github_token 9)"),
        "{dry}"
    );
    std::fs::write(
        &cfg,
        "redaction:\n  extra_patterns:\n    - name: broken\n      regex: '(['\n",
    )
    .unwrap();
    let (code, err) = env.fails(&["--config", c, "list", "--all"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("extra_patterns") && err.contains("broken"),
        "{err}"
    );
}

#[test]
fn list_show_and_the_listing_cache_mask_secrets_unless_told_not_to() {
    let env = TestEnv::empty();
    let secret = "ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R";
    let texts = vec![format!("deploy with token {secret} please")];
    let id = claude_session(&env, &texts, &serde_json::json!({}), "71");
    let listed = env.ok(&["list", "--all"]);
    let listed_json = env.ok(&["list", "--all", "--json"]);
    let shown = env.ok(&["show", &id]);
    let shown_json = env.ok(&["show", &id, "--json"]);
    for out in [&listed, &listed_json, &shown, &shown_json] {
        assert!(!out.contains(secret), "{out}");
        assert!(out.contains("[REDACTED:"), "{out}");
    }
    // The cache in the state folder holds the masked title only.
    let state = env.dir.path().join("state");
    for e in walkdir::WalkDir::new(&state)
        .into_iter()
        .filter_map(|e| e.ok())
    {
        if e.file_type().is_file() {
            let bytes = std::fs::read(e.path()).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{} holds the secret",
                e.path().display()
            );
        }
    }
    // Asked for, the raw text.
    assert!(
        env.ok(&["list", "--all", "--no-redact", "--json"])
            .contains(secret)
    );
    assert!(env.ok(&["show", &id, "--no-redact"]).contains(secret));
}

/// `texts` as a GitHub Copilot CLI session: in a compaction's summary, a prompt (and its
/// title in `workspace.yaml`), reasoning, a shell command and its output, a file created, a
/// tool call's arguments (`structured`), an answer.
fn copilot_session(env: &TestEnv, texts: &[String], structured: &Value, name: &str) -> String {
    let id = format!("5e1a0f00-0000-4000-8000-0000000000{name}");
    let dir = env.home("copilot").join("session-state").join(&id);
    std::fs::create_dir_all(&dir).unwrap();
    let all = texts.join("\n");
    let mut nested = structured.clone();
    nested["body"] = json!({"release": {"notes": all}});
    let mut lines: Vec<String> = Vec::new();
    let mut parent = Value::Null;
    let mut event = |kind: &str, data: Value| {
        let n = lines.len();
        let eid = format!("f4000000-0000-4000-8000-{n:012}");
        let at = format!("2026-11-29T10:00:{n:02}.000Z");
        let e = json!({"type": kind, "data": data, "id": eid, "timestamp": at, "parentId": parent});
        lines.push(e.to_string());
        parent = json!(eid);
    };
    event(
        "session.start",
        json!({"sessionId": id, "version": 1, "producer": "copilot-agent", "copilotVersion": "1.0.102",
               "startTime": "2026-11-29T10:00:00.000Z", "context": {"cwd": "/home/dev/projects/redact"}}),
    );
    event(
        "session.compaction_complete",
        json!({"success": true, "summaryContent": format!("Summary of the earlier work:\n{all}")}),
    );
    event(
        "user.message",
        json!({"content": format!("Set up the deploy. {all}")}),
    );
    let call = |id: &str, name: &str, arguments: Value| json!({"toolCallId": id, "name": name, "arguments": arguments, "type": "function"});
    event(
        "assistant.message",
        json!({"messageId": "m1", "content": "", "reasoningText": format!("The user pasted: {all}"),
        "toolRequests": [
            call("c1", "bash", json!({"command": format!("cat > .env <<EOF\n{all}\nEOF"), "description": "env"})),
            call("c2", "create", json!({"path": "/home/dev/projects/redact/config.env", "file_text": all})),
            call("c3", "http_request", nested),
        ]}),
    );
    for (c, output) in [
        ("c1", all.as_str()),
        ("c2", "Created file"),
        ("c3", "HTTP 200"),
    ] {
        event(
            "tool.execution_complete",
            json!({"toolCallId": c, "success": true, "result": {"content": output}}),
        );
    }
    event(
        "assistant.message",
        json!({"messageId": "m2", "content": format!("Saved: {all}")}),
    );
    event("user.message", json!({"content": "Thanks, now deploy."}));
    event(
        "assistant.message",
        json!({"messageId": "m3", "content": "Deployed."}),
    );
    std::fs::write(dir.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let title =
        serde_json::to_string(&format!("Set up the deploy. {}", all.replace('\n', " "))).unwrap();
    std::fs::write(
        dir.join("workspace.yaml"),
        format!("id: {id}\ncwd: /home/dev/projects/redact\nname: {title}\nuser_named: false\n"),
    )
    .unwrap();
    id
}

/// A Codex rollout whose `session_meta.git` names `remote`, with one exchange.
fn codex_session_with_remote(env: &TestEnv, remote: &str, name: &str) -> String {
    let id = format!("0199f000-0000-7000-8000-0000000007{name}");
    let dir = env.codex_home().join("sessions/2026/11/30");
    std::fs::create_dir_all(&dir).unwrap();
    let lines = [
        json!({"timestamp": "2026-11-30T10:00:00.000Z", "type": "session_meta", "payload": {"id": id, "timestamp": "2026-11-30T10:00:00.000Z", "cwd": "/home/dev/projects/app", "originator": "codex_cli_rs", "cli_version": "0.60.0", "source": "cli",
            "git": {"commit_hash": "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b", "branch": "main", "repository_url": remote}}}),
        json!({"timestamp": "2026-11-30T10:00:01.000Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the build."}]}}),
        json!({"timestamp": "2026-11-30T10:00:02.000Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Fixed."}]}}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(
        dir.join(format!("rollout-2026-11-30T10-00-00-{id}.jsonl")),
        text.join("\n") + "\n",
    )
    .unwrap();
    id
}

/// Codex's thread index as codex 0.171 creates it (migration 64), reduced to the columns a
/// relay writes, all nullable.
fn codex_thread_index(env: &TestEnv) -> std::path::PathBuf {
    let db = env.codex_home().join("state_5.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE _sqlx_migrations (version INTEGER PRIMARY KEY);
         INSERT INTO _sqlx_migrations VALUES (64);
         CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT, created_at INTEGER,
           updated_at INTEGER, created_at_ms INTEGER, updated_at_ms INTEGER, recency_at INTEGER,
           recency_at_ms INTEGER, source TEXT, model_provider TEXT, cwd TEXT, title TEXT,
           first_user_message TEXT, preview TEXT, sandbox_policy TEXT, approval_mode TEXT,
           cli_version TEXT, git_sha TEXT, git_branch TEXT, git_origin_url TEXT,
           history_mode TEXT, originator TEXT);",
    )
    .unwrap();
    db
}

/// A git remote's credentials (a token in the userinfo's password, or as its user) are masked
/// in every output that carries the remote: the relayed Codex rollout's `session_meta`, Codex's
/// thread index, the relay into Claude Code, both exports and `show`; the user and host stay,
/// and an ssh remote is left as it is.
#[test]
fn git_remote_credentials_are_masked_in_every_output() {
    let env = TestEnv::empty();
    let proj = env.project();
    let db = codex_thread_index(&env);
    let glpat = "glpat-Ab3dEf6hIj9kLm2nOp5q";
    let legacy = "26656cfc1561a28eed7f685c955901662d7047ed";
    let ssh = "git@github.com:acme/app.git";
    let sessions = [
        (
            format!("https://oauth2:{glpat}@gitlab.example.com/acme/app.git"),
            "https://oauth2:[REDACTED:gitlab_token]@gitlab.example.com/acme/app.git",
        ),
        (
            format!("https://{legacy}@github.com/acme/app.git"),
            "https://[REDACTED:url_credentials]@github.com/acme/app.git",
        ),
    ];
    let ids: Vec<String> = (0..sessions.len())
        .map(|n| codex_session_with_remote(&env, &sessions[n].0, &format!("{n:02}")))
        .collect();
    let before = all_files(&env);
    let mut written = String::new();
    for (id, (_, masked)) in ids.iter().zip(&sessions) {
        let r: Value = serde_json::from_str(
            &env.ok(&["relay", id, "--to", "codex", "--cwd", &proj, "--json"]),
        )
        .unwrap();
        let rollout = std::fs::read_to_string(r["target"]["path"].as_str().unwrap()).unwrap();
        let meta: Value = serde_json::from_str(rollout.lines().next().unwrap()).unwrap();
        assert_eq!(meta["payload"]["git"]["repository_url"], *masked);
        let conn = rusqlite::Connection::open(&db).unwrap();
        let origin: String = conn
            .query_row(
                "SELECT git_origin_url FROM threads WHERE id = ?1",
                [r["target"]["id"].as_str().unwrap()],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(origin, *masked);
        written.push_str(&env.ok(&["relay", id, "--to", "claude", "--cwd", &proj]));
        written.push_str(&env.ok(&["export", id, "--format", "markdown"]));
        for args in [
            vec!["export", id, "--format", "jsonl"],
            vec!["show", id],
            vec!["show", id, "--json"],
        ] {
            let out = env.ok(&args);
            assert!(out.contains(masked), "{args:?}:\n{out}");
            written.push_str(&out);
        }
    }
    written.push_str(&files_written(&env, &before));
    for secret in [glpat, legacy] {
        assert!(!written.contains(secret), "{secret} left");
    }
    let id = codex_session_with_remote(&env, ssh, "09");
    assert!(env.ok(&["export", &id]).contains(ssh));
    assert!(env.ok(&["show", &id]).contains(ssh));
}
