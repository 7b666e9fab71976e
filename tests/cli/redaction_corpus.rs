//! Corpora of the credentials a second safety review found leaking, by class: those passed to
//! everyday commands, those inside config and key files a tool printed, and vendor formats in
//! older or escaped forms; each masked by the redactor, and all of them end to end through
//! relays, exports, `show` and the listing. Beside them, an innocent corpus of ids, hashes,
//! addresses and build metadata, bare and as `NAME=value` lines under innocent names, of which
//! nothing may be masked.

use std::collections::BTreeMap;

use serde_json::json;
use session_relay::redact::{Counts, Redactor};

use crate::common::TestEnv;

/// One planted credential: the family it belongs to, the secret, and the text that holds it
/// (every `{}` is the secret).
struct Case {
    family: &'static str,
    secret: &'static str,
    text: String,
}

fn case(family: &'static str, secret: &'static str, template: &str) -> Case {
    assert!(template.contains("{}"), "{template}");
    Case {
        family,
        secret,
        text: template.replace("{}", secret),
    }
}

/// Credentials given as arguments or on standard input of everyday commands.
fn commands() -> Vec<Case> {
    vec![
        // AWS CLI settings.
        case(
            "aws",
            "Ti36RGXYf1dnaH9bO2DET4EeVTRzEeqQmUXGmDQB",
            "aws configure set aws_secret_access_key {}",
        ),
        case(
            "aws",
            "8o1TKEHTf9NYHCoAW+Gt4bvkjI83UeH8OcFBS3xw",
            "aws configure set default.aws_secret_access_key {} && aws sts get-caller-identity",
        ),
        case(
            "aws",
            "FwoGZXIvYXdzE8zqmrSYnI4ap1iVcHfrx+z/6bjwtRfEhWpclMgNEtIk+Rgo01TM+rio76c3iK+oFTQv7cm66JdyKfH9Xin9UN0AlnNZQUnl2UgShYIGALA7M44Oht9ad264G",
            "aws configure set aws_session_token {} --profile ci",
        ),
        case(
            "aws",
            "yqCla2212qtWe6TbH0s9RkQ2mZx7VbN4cLp1dA8f",
            "aws configure set profile.deploy.aws_secret_access_key \"{}\"",
        ),
        case(
            "aws",
            "HsjfEqjcrpqL1xWv93mBn7Ty2kZ0oPa5sDf8gHjK",
            "  aws configure set aws_secret_access_key '{}' --profile staging\n  aws s3 ls",
        ),
        // Kubernetes bootstrap and client credentials.
        case(
            "kube",
            "sgthk1.v51p66qu9by39lyc",
            "kubeadm join 10.0.0.10:6443 --token {} --discovery-token-ca-cert-hash sha256:c32dd35ffe2cad6ac24fa38f2b0c276893195f7cf0c7b3a253752455224cb3d9",
        ),
        case(
            "kube",
            "lle50d.o3lzaie9yay53xh6",
            "sudo kubeadm join api.k8s.internal:6443 --token={} --control-plane",
        ),
        case(
            "kube",
            "tux6hfSuDnXhPfIQvWKSEYodutYUVQYy",
            "kubectl config set-credentials ci-bot --token={}",
        ),
        case(
            "kube",
            "qXLdeqDGoGGFsuBHpNR2SP4vKOn3K0lm",
            "kubectl --server https://k8s.example.com --token {} get pods -n prod",
        ),
        case(
            "kube",
            "correcthorsebatterystaple",
            "kubectl create secret generic db-creds --from-literal=username=app --from-literal=password={}",
        ),
        case(
            "kube",
            "pWcbSM2G350MqVMs5mvL3MO4JvGlVX2u",
            "kubectl create secret generic api --from-literal=API_TOKEN={} -n prod",
        ),
        // Registry logins fed on standard input.
        case(
            "stdin",
            "xlkQUFeczD7SCsNgYOSFZO29rvsSn005",
            "echo \"{}\" | docker login ghcr.io -u bot --password-stdin",
        ),
        case(
            "stdin",
            "S2ZBeqNyuDskplxo7tcnSKEbwaOsrJAW",
            "echo -n {} | podman login quay.io --username bot --password-stdin",
        ),
        case(
            "stdin",
            "H7pDDd06fUiUzClpczRCIHgJbICIF1Lk",
            "printf '%s' '{}' | helm registry login registry.example.com -u ci --password-stdin",
        ),
        case(
            "stdin",
            "uf09PsIGQ0oAwDx3",
            "printf \"{}\\n\" | oras login ghcr.io -u bot --password-stdin",
        ),
        case(
            "stdin",
            "WV-CLGPeAL5Pos9k",
            "docker login -u bot --password-stdin registry.gitlab.com <<< \"{}\"",
        ),
        case(
            "stdin",
            "Wctn1MC0ylBCl1Zq",
            "echo 'deploy:{}' | sudo chpasswd",
        ),
        case(
            "stdin",
            "bluemoonrising",
            "echo \"{}\" | sudo passwd --stdin deploy",
        ),
        // Java key stores.
        case(
            "java",
            "P_AFfUWw!vyZg8",
            "keytool -genkeypair -alias app -keyalg RSA -keystore app.jks -storepass {} -keypass {} -dname CN=app",
        ),
        case(
            "java",
            "KF6Rt-UoswD_7",
            "jarsigner -keystore release.jks -storepass {} app-release.apk release",
        ),
        case(
            "java",
            "changeitplease",
            "keytool -importkeystore -srckeystore a.p12 -srcstoretype PKCS12 -srcstorepass {} -destkeystore b.jks",
        ),
        case(
            "java",
            "trustno1butme",
            "java -Djavax.net.ssl.keyStorePassword={} -jar service.jar",
        ),
        case(
            "java",
            "Ap3ksigner-pw",
            "apksigner sign --ks release.jks --ks-pass pass:{} app.apk",
        ),
        case(
            "java",
            "gpgpassphrase",
            "mvn -B deploy -Dgpg.passphrase={} -Prelease",
        ),
        // Database clients: flags, URIs, keyword strings.
        case(
            "database",
            "correcthorse",
            "psql \"host=db.internal port=5432 dbname=app user=app password={} sslmode=require\"",
        ),
        case(
            "database",
            "MongoAdm1nPw",
            "mongosh \"mongodb://admin:{}@mongo.internal:27017/admin\"",
        ),
        case(
            "database",
            "mongopassword7",
            "mongo -u admin -p {} --authenticationDatabase admin",
        ),
        case(
            "database",
            "Sqlcmd-Passw0rd",
            "sqlcmd -S tcp:sql.internal,1433 -U sa -P '{}' -Q \"SELECT 1\"",
        ),
        case(
            "database",
            "bcpsecretvalue",
            "bcp app.dbo.users out users.dat -S sql.internal -U sa -P {} -c",
        ),
        case(
            "database",
            "rootpassword",
            "mysqladmin -u root password '{}'",
        ),
        case(
            "database",
            "OracleSys42",
            "sqlplus system/{}@//db.internal:1521/ORCL @migrate.sql",
        ),
        case(
            "database",
            "redisauthvalue",
            "redis-cli -h cache.internal AUTH default {}",
        ),
        // Other tools' password arguments.
        case(
            "tools",
            "htpasswdvalue",
            "htpasswd -b -c /etc/nginx/.htpasswd admin {}",
        ),
        case("tools", "letmeinnow", "htpasswd -nbB admin {}"),
        case(
            "tools",
            "deployfiles",
            "smbclient //fs.internal/share -U 'CORP\\deploy%{}' -c 'ls'",
        ),
        case(
            "tools",
            "ldapbindpw",
            "ldapsearch -x -H ldap://ldap.internal -D \"cn=admin,dc=example,dc=org\" -w {} -b \"dc=example,dc=org\"",
        ),
        case("tools", "archivepass", "zip -P {} -r backup.zip secrets/"),
        case("tools", "sevenzippw", "7z a -p{} -mhe=on backup.7z dir/"),
        case(
            "tools",
            "JdmTrU7qP2vX9wZs4LkN",
            "curl --oauth2-bearer {} https://api.example.com/v1/me",
        ),
        case(
            "tools",
            "oy2kaxnr4mlq3sw0p8t6d1c7fvbyuhgiej5z9xq0w2e4r6t8",
            "nuget push pkg.nupkg -ApiKey {} -Source https://nuget.example.com/v3/index.json",
        ),
    ]
}

/// Credentials inside config and key files that a tool printed.
fn config_files() -> Vec<Case> {
    vec![
        // .netrc
        case(
            "netrc",
            "netrcpassword",
            "$ cat ~/.netrc\nmachine api.heroku.com login dev@example.com password {}",
        ),
        case(
            "netrc",
            "n3trc-multi",
            "machine git.example.com\n  login deploy\n  password {}\n",
        ),
        case(
            "netrc",
            "upload-pw-file",
            "machine uploads.example.com login ci port 443 password {}",
        ),
        case(
            "netrc",
            "anonymousftp1",
            "default login anonymous password {}",
        ),
        case(
            "netrc",
            "s3cond-entry",
            "machine a.example.com login a password first-entry-pw\nmachine b.example.com login b password {}",
        ),
        // Docker / Podman registry auth (base64 of user:password).
        case(
            "docker",
            "ZGVwbG95LWJvdDpNTm9jWEFEN29CNlhiQk5HOWVGbQ==",
            "{\n  \"auths\": {\n    \"ghcr.io\": {\n      \"auth\": \"{}\"\n    }\n  }\n}",
        ),
        case(
            "docker",
            "Y2k6em1VYXBGSGExSjdzRXV0Tg==",
            r#"{\"auths\":{\"registry.gitlab.com\":{\"auth\":\"{}\"}}}"#,
        ),
        case(
            "docker",
            "Ym90OnF1YXlyb2JvdHRva2Vu",
            "$ cat ${XDG_RUNTIME_DIR}/containers/auth.json\n{\"auths\": {\"quay.io\": {\"auth\": \"{}\"}}}",
        ),
        case(
            "docker",
            "X3Rva2VuOmdsZHQtMWE0ZjhjOWU3YjJkM2Y1",
            "{\"auths\":{\"https://index.docker.io/v1/\":{\"auth\":\"{}\",\"email\":\"dev@example.com\"}}}",
        ),
        case(
            "docker",
            "cmVnaXN0cnk6b2xkLWRvY2tlcmNmZw==",
            "$ cat ~/.dockercfg\n{\"registry.example.com\": {\"auth\": \"{}\", \"email\": \"ci@example.com\"}}",
        ),
        // npm
        case(
            "npmrc",
            "492344bd-1945-4ab4-bb69-9c304739f338",
            "//registry.npmjs.org/:_authToken={}",
        ),
        case(
            "npmrc",
            "amRvZTpTUUhUU1ZPR3lOb1I=",
            "registry=https://npm.example.com/\n_auth={}\nalways-auth=true",
        ),
        case(
            "npmrc",
            "c2VjcmV0bnBtcGFzcw==",
            "//npm.example.com/:username=jdoe\n//npm.example.com/:_password={}",
        ),
        case(
            "npmrc",
            "641b5b02-26a8-4a05-82eb-6e48b1b1c7c9",
            "npmRegistryServer: \"https://npm.example.com\"\nnpmAuthToken: \"{}\"",
        ),
        case(
            "npmrc",
            "cd3e0f86-38c8-416c-b827-14dcaca9499d",
            "npm config set //npm.example.com/:_authToken {}",
        ),
        // kubeconfig
        case(
            "kubeconfig",
            "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFdlFJQkFEQU5CZ2txaGtpRzl3MEJBUUVGQUFTQwo=",
            "users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=\n    client-key-data: {}\n",
        ),
        case(
            "kubeconfig",
            "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUNkZWFkYmVlZg==",
            "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\ndata:\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n  tls.key: {}\n",
        ),
        case(
            "kubeconfig",
            "a8Hq2Lm9Xv4Rt7Np3Kc6Wd1Zs5Fb0Gy",
            "users:\n- name: ci\n  user:\n    token: {}\n",
        ),
        case(
            "kubeconfig",
            "1//0gWq8vX2mN5bT7kL1pR4wY9cF3hJ6dS0aG2eU8iO5tB7nM1vX4zQ",
            "    auth-provider:\n      config:\n        refresh-token: {}\n",
        ),
        case(
            "kubeconfig",
            "LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZLS0tLS0KYjNCbGJuTnphQzFyWlhrdGRqRUFBQUFB",
            "  ssh-privatekey: {}\n  ssh-publickey: c3NoLWVkMjU1MTkgQUFBQUMzTnphQzFsWkRJMU5URTVBQUFBSQ==",
        ),
        // Application env files.
        case(
            "env",
            "7b2a3164a2adbdeddf06a1d3e33ad1a5dff3760fa459219108b66bb46e199d3ddbf81f78c10c6db2bae22f82567df6903086bf6ac1dab030916011ce628cb129",
            "RAILS_ENV=production\nSECRET_KEY_BASE={}\n",
        ),
        case(
            "env",
            "mailpassword",
            "MAIL_HOST=smtp.example.com\nMAIL_PASS={}\n",
        ),
        case("env", "pgdevpass", "DB_USER=app\nDB_PASS={}\nDB_HOST=db\n"),
        case(
            "env",
            "Smtp-Pa55word",
            "export SMTP_PASS={}\nexport SMTP_PORT=587",
        ),
        case("env", "redispwd42", "REDIS_PWD={} ./start.sh"),
        case(
            "env",
            "django-insecure-q8#zt3lmp0xr7vn2kw9yb4cf6",
            "DJANGO_SECRET_KEY='{}'",
        ),
        case(
            "env",
            "w9Kf2LpQ7xZ4vN8cR1tY6bH3",
            "docker run -e NEXTAUTH_SECRET={} -p 3000:3000 web",
        ),
        // Key files in formats other than PEM.
        case(
            "keyfile",
            "gBB+4/ZZr1TbRnUXHtgBgHHwVVDrEnrUgswXIitEP6HmSGbJI77tUrAcmgX/AuVh",
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIOvDk\nPrivate-Lines: 1\n{}\nPrivate-MAC: 6f2c6a9d0e4b8f1a2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a7b8c9d\n",
        ),
        case(
            "keyfile",
            "fNfwhNN3RgVGxuyd7DH19agR0ljRAHRpt5WRzGJ6F9w0XzePfEioJE94rmbQKfHVVUulGl97RXuLp52HFEfueN",
            "{\"kty\": \"RSA\", \"kid\": \"sig-2024\", \"n\": \"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw\", \"e\": \"AQAB\", \"d\": \"{}\"}",
        ),
        case(
            "keyfile",
            "RWRTY0Iy1/FBhIBePJr1poDwxoYPIaIwbNM0VQFKBRZVBrTd7sTYllj1txv5iBUXy/j/zhcPyWbrYVDnFzXG7Y19evtyTSsgeqxwgbTAcrdRGM1s54uu2bqx+q1Vdb6AMvJN1xPmVCA64xCJdmYgUh4enGRBVb",
            "$ cat ~/.minisign/minisign.key\nuntrusted comment: minisign encrypted secret key\n{}\n",
        ),
        case(
            "keyfile",
            "SCBzxREXhoq1PU5+7/ve17PV3vD/0fSMF8FAl/WB/dP=",
            "[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\nPresharedKey = {}\nAllowedIPs = 10.0.0.2/32",
        ),
        case(
            "keyfile",
            "3b1f7e2d9c4a8b6f0e5d7c3a9b1f4e6d",
            "-----BEGIN OpenVPN Static key V1-----\n{}\n8a7b6c5d4e3f20191817161514131211\n-----END OpenVPN Static key V1-----",
        ),
        case(
            "keyfile",
            "w2Kq9Vx1Lm4Np7Rt0Ys3Bd6Fg8Hj5Zc=",
            "<RSAKeyValue><Modulus>xA7SEU+e0yQH5rm9kbCDN9o3aPIo7HbP7tX6WOocLZAtNfyxSZDU16ksL6WjubafOqNEpcwR3RdFsT7bCqnXPBe5ELh5u4VEy19MzxkXRgrMvavzyBpVRgBUwUlV5foK5hhmbktQhyNdy/6LpQRhDUDsTvK+g9Ucj47es9AQJ3U=</Modulus><Exponent>AQAB</Exponent><D>{}</D></RSAKeyValue>",
        ),
        // Build and server configs.
        case(
            "server",
            "mavenrepopw",
            "<settings><servers><server><id>releases</id><username>deploy</username><password>{}</password></server></servers></settings>",
        ),
        case(
            "server",
            "nugetfeedpw",
            "<packageSourceCredentials><feed><add key=\"Username\" value=\"ci\" /><add key=\"ClearTextPassword\" value=\"{}\" /></feed></packageSourceCredentials>",
        ),
        case(
            "server",
            "redisrequirepw",
            "# redis.conf\nbind 127.0.0.1\nrequirepass {}\n",
        ),
        case(
            "server",
            "q3l5Y9xYh3tKmC0-7f8Vw1s_RZ3nQk",
            "[remote]\ntype = sftp\nhost = files.example.com\nuser = backup\npass = {}\n",
        ),
        case(
            "server",
            "b3come-Sudo9",
            "[web]\nweb1 ansible_host=10.0.0.5 ansible_user=deploy ansible_become_pass={}",
        ),
    ]
}

/// Vendor formats in older or escaped forms.
fn vendor_forms() -> Vec<Case> {
    vec![
        // Vault tokens before 1.10 (`s.` service, `b.` batch).
        case("vault", "s.kYW8prQumJ9R2FGZVrDqvHh9", "vault login {}"),
        case(
            "vault",
            "s.oWqY8ocYipSV47T7CVT3XfuU",
            "curl -H \"X-Vault-Token: {}\" https://vault.internal:8200/v1/secret/data/app",
        ),
        case(
            "vault",
            "s.Zq8RtY3pLm0vXw5Kc2Nb7Hd4",
            "Key                  Value\n---                  -----\ntoken                {}\ntoken_accessor       8Hq2Lm9Xv4Rt7Np3Kc6Wd1Zs\ntoken_duration       768h",
        ),
        case(
            "vault",
            "b.AAAAAQBPmHuJUrvkxhwnKfPxl5JmMz-srFENG6dNyd3wI_y5bVFZwwwgBOZMIlMDf8NEL6wwM6LLgNeiZ2sWXC04xGZPQpW3",
            "batch token: {}",
        ),
        case(
            "vault",
            "s.P3nR7tV9xZ1bD5fH8jL2mQ4s",
            "vault login -method=token -no-print {}",
        ),
        // Authorization schemes other than Bearer and Basic.
        case(
            "authorization",
            "00rl3FEaGdRYMzGigFwTSk_HJVAgH-DnNxYJzJuuOt",
            "curl -H \"Authorization: SSWS {}\" https://dev-123.okta.com/api/v1/users",
        ),
        case(
            "authorization",
            "641b5b02-26a8-4a05-82eb-6e48b1b1c7c9",
            "curl -k https://splunk.internal:8089/services/search -H 'Authorization: Splunk {}'",
        ),
        case(
            "authorization",
            "cd3e0f86-38c8-416c-b827-14dcaca9499d",
            "Authorization: GenieKey {}",
        ),
        case(
            "authorization",
            "5a6b7c8d-1e2f-4a3b-9c8d-7e6f5a4b3c2d:fx",
            "curl https://api-free.deepl.com/v2/translate -H \"Authorization: DeepL-Auth-Key {}\"",
        ),
        case(
            "authorization",
            "TlRMTVNTUAABFyQCcYfQPS6exmAiGIWdmU1HTIs/qtNKf3UX4aHK",
            "> GET /api HTTP/1.1\n> Proxy-Authorization: NTLM {}\n",
        ),
        case(
            "authorization",
            "9f8e7d6c5b4a39281706zzQx",
            "requests.get(url, headers={'Authorization': 'Api-Key {}'})",
        ),
        // Webhook URLs and URL credentials escaped in JSON (`\/`).
        case(
            "escaped",
            "T0ABCDEFG\\/B0HIJKLMN\\/AbCdEfGhIjKlMnOpQrStUvWx",
            "{\"webhook\":\"https:\\/\\/hooks.slack.com\\/services\\/{}\"}",
        ),
        case(
            "escaped",
            "651505561304451669\\/jU2JgJngKtFI3OyV2dZAkg05rK_gqv81RKMGHZEM9YpvujA-C5Q52ryFlwRlOEVHzc0X",
            "{\"url\": \"https:\\/\\/discord.com\\/api\\/webhooks\\/{}\"}",
        ),
        case(
            "escaped",
            "T0QRSTUVWX\\/A0YZABCDEF\\/123456789012345678901234",
            "\"trigger\": \"https:\\/\\/hooks.slack.com\\/workflows\\/{}\"",
        ),
        case(
            "escaped",
            "DbPassEscaped9",
            "{\"dsn\":\"postgres:\\/\\/app:{}@db.internal:5432\\/app\"}",
        ),
        case(
            "escaped",
            "26656cfc1561a28eed7f685c955901662d7047ed",
            "{\"remote\":\"https:\\/\\/{}@github.com\\/org\\/app.git\"}",
        ),
        // Azure SAS signatures, URL-encoded or escaped.
        case(
            "sas",
            "wlLs7LenCAnz%2FXMGbQU1mlQHDrF%2FzevdODUDF%2BVz2x7%3D",
            "{\"url\": \"https://acct.blob.core.windows.net/c/b.bin?sv=2022-11-02\\u0026se=2026-01-01\\u0026sr=b\\u0026sp=r\\u0026sig={}\"}",
        ),
        case(
            "sas",
            "Qm9xN3hyVGVzdFNpZ25hdHVyZVZhbHVlMTIzNDU2Nzg%3d",
            "<a href=\"https://acct.blob.core.windows.net/c/b.bin?sv=2022-11-02&amp;sr=b&amp;sp=r&amp;sig={}\">download</a>",
        ),
        case(
            "sas",
            "k3Lm9PqR2sT5vW8xZ1bC4dF7gH0jK6nM9pQ2rS5tV8w%253D",
            "https://acct.blob.core.windows.net/c/b.bin%3Fsv%3D2022-11-02%26sig%3D{}",
        ),
        case(
            "sas",
            "Xy7Wv5Ut3Sr1Qp9On7Ml5Kj3Ih1Gf9Ed7Cb5Az3Yx1Wv%3D",
            "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&srt=sco&sp=rwdlac&se=2026-01-01T00:00:00Z&sig={}",
        ),
        case(
            "sas",
            "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3Ab4Cd%3D",
            "az storage blob upload --sas-token \"sv=2022-11-02&sr=c&sp=w&sig={}\" -f a.txt",
        ),
    ]
}

/// Ids, hashes, addresses and build metadata that sessions are full of: (an innocent name it
/// is assigned to in an env line, the value).
fn innocent_values() -> Vec<(&'static str, &'static str)> {
    vec![
        // ULIDs and nanoids.
        ("RUN_ID", "01ARZ3NDEKTSV4RRFFQ69G5FAV"),
        ("JOB_ULID", "01HQ3K9V7XJ2M5N8P4R6T0W1YZ"),
        ("EVENT_ID", "01J9ZK6M2W8T5Q4R7N3V0X1C2B"),
        ("SHORT_ID", "V1StGXR8_Z5jdHi6B-myT"),
        ("INVITE_CODE", "4f90d13a42xBv7eEwYqvT"),
        ("PUBLIC_ID", "Uakgb_J5m9g-0JDMbcJqL"),
        // Stripe object ids.
        ("PAYMENT_INTENT", "pi_3MtwBwLkdIwHu7ix28a3tqPa"),
        ("CUSTOMER_ID", "cus_NffrFeUfNV2Hib"),
        ("CHARGE_ID", "ch_3MmlLrLkdIwHu7ix0snN0B15"),
        ("PAYMENT_METHOD", "pm_1MqLiJLkdIwHu7ixUEgbFdYF"),
        ("SUBSCRIPTION_ID", "sub_1MowQVLkdIwHu7ixeRlqHVzs"),
        ("STRIPE_EVENT", "evt_1NG8Du2eZvKYlo2CUI79vXWy"),
        ("PRICE_ID", "price_1MoBy5LkdIwHu7ixZhnattbh"),
        // Chain addresses and hashes.
        (
            "SOLANA_ADDRESS",
            "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV",
        ),
        (
            "PROGRAM_ADDRESS",
            "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
        ),
        (
            "MINT_ADDRESS",
            "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
        ),
        ("WALLET", "0x742d35Cc6634C0532925a3b844Bc454e4438f44e"),
        ("CONTRACT", "0xde0B295669a9FD93d5F28D9Ec85E40f4cb697BAe"),
        (
            "TX_HASH",
            "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060",
        ),
        ("BTC_ADDRESS", "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"),
        ("IPFS_CID", "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG"),
        // Base64 config blobs.
        (
            "APP_CONFIG_B64",
            "eyJsb2dMZXZlbCI6ImluZm8iLCJyZXRyaWVzIjozfQ==",
        ),
        ("SERVICES_JSON", "W3sibmFtZSI6IndlYiIsInBvcnQiOjgwODB9XQ=="),
        (
            "FEATURE_FLAGS",
            "Y29uZmlnOiB7IGRlYnVnOiBmYWxzZSwgY2FjaGU6IHRydWUgfQ==",
        ),
        ("GRAPHQL_NODE", "MDQ6VXNlcjU4MzIzMQ=="),
        // Build labels and versions.
        ("BUILD_LABEL", "build-20241105.3+g4f3c2b1"),
        ("RELEASE_TAG", "v2.14.0-rc.1+build.5172"),
        ("CI_RUN", "ci-run-8123456789-attempt-2"),
        ("VERSION", "1.4.2+20241105.sha.4f3c2b1"),
        ("APP_VERSION", "2.0.0-beta.3+exp.sha.5114f85"),
        ("TOOLCHAIN", "nightly-2024-11-05-x86_64-unknown-linux-gnu"),
        // Git SHAs and UUIDs.
        ("GIT_SHA", "4f3c2b1a0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b"),
        ("PARENT_COMMIT", "9fceb02d0ae598e95dc970b74767f19372d61af8"),
        ("REQUEST_UUID", "771ce1df-ae7a-4516-8192-f08c38166af2"),
        ("SESSION_UUID", "0199a000-0000-7000-8000-00000000e0e0"),
        // Digests and integrity strings.
        (
            "IMAGE_DIGEST",
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
        (
            "ARCHIVE_SHA512",
            "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
        ),
        (
            "NPM_INTEGRITY",
            "sha512-Q6Q2xP4Zp2+Ql8m6mWbS1V6Xo5qYcXzv1uJ6tG0sHqB8x3Y2K5h9Jq7uS0l8pK4f2Z1QnE9wVbR6cT3yD0aLmA==",
        ),
        (
            "SRI_HASH",
            "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC",
        ),
        (
            "BASE_IMAGE",
            "ghcr.io/acme/app@sha256:9b2cf535f27731c974343645a3985328e5b0f2d4c6a8e0b2d4f6a8c0e2b4d6f8",
        ),
        ("GO_SUM", "h1:FEBLx1zS214owpjy7qsBeixbURkuhQAwrK5UwLGTwt4="),
        // Kubernetes names, S3 ETags, cloud ids.
        ("POD_NAME", "web-7d4b9c8f6d-x2k9q"),
        ("VOLUME", "pvc-8f3c2b1a-0e9d-4c7b-a5f4-e3d2c1b0a9f8"),
        ("REPLICA_SET", "coredns-5dd5756b68"),
        ("S3_ETAG", "\"d41d8cd98f00b204e9800998ecf8427e\""),
        ("MULTIPART_ETAG", "\"9b2cf535f27731c974343645a3985328-5\""),
        ("ROLE_ARN", "arn:aws:iam::123456789012:role/deploy-2024"),
        ("TRACE_ID", "4bf92f3577b34da6a3ce929d0e0e4736"),
        ("REQUEST_ID", "req_011CUa2b3c4d5e6f7g8h9i0j"),
        ("MESSAGE_ID", "msg_01XFDUDYJgAACzvnptvVoYEL"),
        ("TOOL_USE_ID", "toolu_01A09q90qw90lq917835lq9"),
        ("COMPLETION_ID", "chatcmpl-AbCdEf0123456789GhIjKlMn"),
        ("PULL_REQUEST_NODE", "PR_kwDOAbCdEf5ZxYzA"),
        ("FIREBASE_APP_ID", "1:1234567890:web:abcdef1234567890abcd"),
        (
            "NIX_STORE_PATH",
            "/nix/store/5rn1v0hkk9vhq7xy0wm0dnp6fj6hql0i-bash-5.2",
        ),
        (
            "IPFS_CIDV1",
            "bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi",
        ),
        (
            "CONTAINER_ID",
            "3f4e5d6c7b8a91a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081920",
        ),
        ("VIDEO_ID", "dQw4w9WgXcQ"),
    ]
}

/// Each case's text as the redactor masks it, and the cases whose secret is still there.
fn leaks(cases: &[Case]) -> Vec<String> {
    let r = Redactor::new(&[], &[]).unwrap();
    cases
        .iter()
        .filter_map(|c| {
            let out = r.text(&c.text, &mut Counts::new());
            out.contains(c.secret)
                .then(|| format!("[{}] {}\n    -> {}", c.family, c.text, out))
        })
        .collect()
}

/// Every family of a class has at least five variants, and the class is masked whole.
fn assert_class_masked(class: &str, cases: &[Case], families: &[&str]) {
    let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
    for c in cases {
        *sizes.entry(c.family).or_default() += 1;
    }
    assert_eq!(
        sizes.keys().copied().collect::<Vec<_>>(),
        {
            let mut f = families.to_vec();
            f.sort();
            f
        },
        "{class}"
    );
    for (family, n) in &sizes {
        assert!(*n >= 5, "{class}: only {n} variants of {family}");
    }
    let left = leaks(cases);
    assert!(
        left.is_empty(),
        "{class}: {} of {} secrets left:\n{}",
        left.len(),
        cases.len(),
        left.join("\n")
    );
}

#[test]
fn credentials_given_to_commands_are_masked() {
    assert_class_masked(
        "commands",
        &commands(),
        &["aws", "kube", "stdin", "java", "database", "tools"],
    );
}

#[test]
fn credentials_in_printed_config_and_key_files_are_masked() {
    assert_class_masked(
        "config files",
        &config_files(),
        &[
            "netrc",
            "docker",
            "npmrc",
            "kubeconfig",
            "env",
            "keyfile",
            "server",
        ],
    );
}

#[test]
fn older_and_escaped_vendor_forms_are_masked() {
    assert_class_masked(
        "vendor forms",
        &vendor_forms(),
        &["vault", "authorization", "escaped", "sas"],
    );
}

/// The texts of the innocent corpus: each value bare, in a sentence, and assigned to its
/// innocent name as an env line, an exported variable and a `docker run -e` argument.
fn innocent_texts() -> Vec<String> {
    innocent_values()
        .into_iter()
        .flat_map(|(name, value)| {
            [
                value.to_string(),
                format!("the job reported {value} when it finished"),
                format!("{name}={value}"),
                format!("export {name}=\"{value}\""),
                format!("docker run -e {name}={value} app"),
            ]
        })
        .collect()
}

#[test]
fn innocent_ids_hashes_and_labels_are_not_masked() {
    let values = innocent_values();
    assert!(values.len() >= 50, "{}", values.len());
    let r = Redactor::new(&[], &[]).unwrap();
    let texts = innocent_texts();
    let masked: Vec<String> = texts
        .iter()
        .filter_map(|t| {
            let mut counts = Counts::new();
            let out = r.text(t, &mut counts);
            (out != *t).then(|| format!("{t}\n    -> {out} {counts:?}"))
        })
        .collect();
    assert!(
        masked.is_empty(),
        "{} of {} innocent texts masked:\n{}",
        masked.len(),
        texts.len(),
        masked.join("\n")
    );
}

/// The corpora planted in sessions of Claude Code, Codex and pi, relayed every way, exported, shown and
/// listed: no secret is left anywhere, and no innocent text is masked.
#[test]
fn the_corpora_are_masked_in_every_output() {
    let env = TestEnv::empty();
    let proj = env.project();
    let cases: Vec<Case> = commands()
        .into_iter()
        .chain(config_files())
        .chain(vendor_forms())
        .collect();
    let mut ids = Vec::new();
    // In groups small enough that no tool output is cut.
    for (n, group) in cases.chunks(20).enumerate() {
        let texts: Vec<String> = group.iter().map(|c| c.text.clone()).collect();
        assert!(texts.join("\n").chars().count() < 8000);
        ids.push(super::claude_session(
            &env,
            &texts,
            &json!({}),
            &format!("{:02}", 20 + n),
        ));
        ids.push(super::codex_session(
            &env,
            &texts,
            &json!({}),
            &format!("{:02}", 40 + n),
        ));
        ids.push(super::copilot_session(
            &env,
            &texts,
            &json!({}),
            &format!("{:02}", 60 + n),
        ));
        ids.push(super::pi_session(
            &env,
            &texts,
            &json!({}),
            &format!("{:02}", 20 + n),
        ));
    }
    let (mut written, _) = super::relay_everything(&env, &ids, &proj, "corpus");
    for id in &ids {
        written.push_str(&env.ok(&["show", id]));
        written.push_str(&env.ok(&["show", id, "--json"]));
    }
    written.push_str(&env.ok(&["list", "--all", "--json"]));
    let left: Vec<String> = cases
        .iter()
        .filter(|c| written.contains(c.secret))
        .map(|c| {
            let at = written.find(c.secret).unwrap();
            let from = written[..at]
                .char_indices()
                .rev()
                .nth(200)
                .map_or(0, |(i, _)| i);
            format!(
                "[{}] {}\n    in: {}",
                c.family,
                c.secret,
                &written[from..at + c.secret.len()]
            )
        })
        .collect();
    assert!(left.is_empty(), "secrets left:\n{}", left.join("\n"));

    let innocents = innocent_texts();
    let mut ids = Vec::new();
    let mut group = Vec::new();
    for t in innocents.iter().chain([&String::new()]) {
        if t.is_empty() || group.iter().map(|g: &String| g.len() + 1).sum::<usize>() > 6000 {
            let n = ids.len();
            ids.push(super::claude_session(
                &env,
                &group,
                &json!({}),
                &format!("{}", 60 + n),
            ));
            ids.push(super::codex_session(
                &env,
                &group,
                &json!({}),
                &format!("{}", 61 + n),
            ));
            ids.push(super::pi_session(
                &env,
                &group,
                &json!({}),
                &format!("{}", 60 + n),
            ));
            group.clear();
        }
        group.push(t.clone());
    }
    let (written, reports) = super::relay_everything(&env, &ids, &proj, "innocent corpus");
    for r in &reports {
        assert_eq!(r["redactions"], json!({}), "innocent text masked");
    }
    assert!(
        !written.contains("[REDACTED"),
        "innocent text masked:\n{}",
        written
            .lines()
            .filter(|l| l.contains("[REDACTED"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
