"""A real mail user for the email channel's tests, on Python's own smtplib and imaplib.

send SMTP_PORT USER PASSWORD TO SUBJECT BODY MESSAGE_ID [HEADER=VALUE ...]
    submits one mail (AUTH as USER) to TO. `From=...` replaces the From header (a forged one);
    `X-Test-Html=...` makes the mail multipart/alternative with that HTML part first (or,
    with BODY empty, an HTML-only mail).
read IMAP_PORT USER PASSWORD
    prints the INBOX as JSON: [{from, subject, inReplyTo, references, messageId, body, attachments}], each
    attachment as {name, type, oggOpus} (whether its bytes are an OGG stream with an OpusHead).
"""

import email
import email.message
import imaplib
import json
import smtplib
import sys


def send(port, user, password, to, subject, body, message_id, *headers):
    msg = email.message.EmailMessage()
    msg["From"] = user
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = message_id
    html = None
    for header in headers:
        name, value = header.split("=", 1)
        if name == "X-Test-Html":
            html = value
            continue
        if name == "From":
            del msg["From"]
        msg[name] = value
    if html is None:
        msg.set_content(body)
    else:
        msg.set_content(html, subtype="html")
        if body:
            msg.add_alternative(body)
    with smtplib.SMTP("127.0.0.1", int(port)) as smtp:
        smtp.login(user, password)
        smtp.send_message(msg)


def read(port, user, password):
    box = imaplib.IMAP4("127.0.0.1", int(port))
    box.login(user, password)
    box.select("INBOX")
    _, data = box.search(None, "ALL")
    out = []
    for num in data[0].split():
        _, parts = box.fetch(num, "(RFC822)")
        msg = email.message_from_bytes(parts[0][1])
        body = msg.get_payload(decode=True) if not msg.is_multipart() else msg.get_payload(0).get_payload(decode=True)
        attachments = []
        for part in msg.walk():
            if part.get_filename():
                data = part.get_payload(decode=True) or b""
                attachments.append({"name": part.get_filename(), "type": part.get_content_type(),
                                    "oggOpus": data[:4] == b"OggS" and b"OpusHead" in data[:64]})
        out.append({"from": msg["From"], "subject": msg["Subject"], "inReplyTo": msg["In-Reply-To"],
                    "references": msg["References"], "messageId": msg["Message-ID"], "body": (body or b"").decode("utf-8", "replace").strip(),
                    "attachments": attachments})
    box.logout()
    print(json.dumps(out))


{"send": send, "read": read}[sys.argv[1]](*sys.argv[2:])
