"""Generate the bundled evalbeam example: customer support for a fictional company.

Lumenfold Home Systems is invented for this example (no real brand). The script
writes, into its own folder or into the directory given as the only argument:

    knowledge.md     the support knowledge base (the source of every context)
    faq.parquet      question/answer FAQ entries consistent with knowledge.md
    faq.csv          the same FAQ as CSV
    cases.parquet    evaluation cases with recorded answers of varying quality
    README.md        what the files hold and how many cases of each quality

Deterministic: standard library + pyarrow, one fixed seed; running it twice
gives byte-identical files.

    python examples/support/make_example.py [OUTPUT_DIR]
"""
from __future__ import annotations

import csv
import io
import random
import re
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SEED = 20250201
CASES_PER_KIND = 24          # the main quality kinds
SMALL_KIND_CASES = 8         # hedged, polite
COMPANY = "Lumenfold Home Systems"

# --------------------------------------------------------------------------
# Knowledge base: sections of passages. Every passage is one paragraph of
# knowledge.md; case contexts are copied from here verbatim.
# --------------------------------------------------------------------------

TITLE = "# Lumenfold Home Systems — Customer Support Knowledge Base"
INTRO = ("Lumenfold Home Systems is a fictional company invented for the evalbeam example "
         "data. This knowledge base is the single source of truth for support answers: when "
         "a policy changes, this document is updated first and the FAQ follows. "
         "Last reviewed: 2025-02-01.")

SECTIONS: list[tuple[str, list[tuple[str, str]]]] = [
    ("About Lumenfold and its products", [
        ("about-1", "Lumenfold Home Systems was founded on April 12, 2016 and sells home security "
                    "hardware together with the Lumenfold Cloud video subscription. The company "
                    "employs about 340 people and serves more than 1.2 million homes in 30 "
                    "countries."),
        ("about-2", "The hardware line-up has four products. The Lumenfold Cam Indoor costs $59.99, "
                    "the Lumenfold Cam Outdoor costs $129.99, the Lumenfold Doorbell Pro costs "
                    "$179.99 and the Lumenfold Hub costs $89.00. A single Hub can connect up to 16 "
                    "cameras and doorbells."),
        ("about-3", "The Starter Bundle contains one Hub and two Cam Indoor units for $179.00, which "
                    "is about 14% less than buying the items separately. The Perimeter Bundle "
                    "contains one Hub, three Cam Outdoor units and one Doorbell Pro for $549.00."),
    ]),
    ("Plans and pricing", [
        ("plans-1", "Lumenfold Cloud has five plans: Basic, Plus, Premier, Business and Enterprise. "
                    "Basic is free and keeps 24 hours of motion clips for up to 2 cameras. Plus "
                    "costs $9.99 per month or $99.99 per year and keeps 30 days of video history "
                    "for up to 5 cameras."),
        ("plans-2", "Premier costs $19.99 per month or $199.99 per year. It keeps 60 days of video "
                    "history for an unlimited number of cameras at one home and is the only home "
                    "plan that includes 24/7 continuous video recording (CVR)."),
        ("plans-3", "The Business plan costs $6.50 per camera per month with a minimum of 10 "
                    "cameras, and keeps 90 days of video history. Enterprise contracts are "
                    "negotiated individually, carry a $10,000 enterprise minimum per year, and "
                    "include a dedicated account manager and a 99.95% monthly uptime commitment."),
        ("plans-4", "On March 3, 2024 the price of the monthly Plus plan rose from $8.99 to $9.99 "
                    "per month. Customers who subscribed before that date kept the old price until "
                    "their first renewal on or after June 1, 2024."),
        ("plans-5", "Paying yearly instead of monthly saves about 17% on Plus and Premier. Students "
                    "and registered nonprofit organizations receive a 25% discount on Plus and "
                    "Premier; the discount must be re-verified every 12 months."),
        ("plans-6", "Every new account can start one 30-day free trial of Premier. No payment is "
                    "taken if the trial is cancelled before it ends, and a reminder email is sent "
                    "3 days before the first charge. Accounts that had a paid plan in the previous "
                    "12 months are not eligible for the trial."),
    ]),
    ("Billing and payments", [
        ("billing-1", "Lumenfold accepts credit cards, debit cards, Lumenfold gift cards and digital "
                      "wallet payments in the app. Bank transfer is available only for Business and "
                      "Enterprise customers, whose invoices are payable within 30 days (net 30). "
                      "Gift cards are sold in amounts from $25 to $500 and never expire."),
        ("billing-2", "Monthly plans renew on the same day of the month as the original sign-up. If "
                      "that day does not exist in a given month, for example the 31st, the charge "
                      "is taken on the last day of that month. A receipt is emailed within 1 hour "
                      "of every successful charge."),
        ("billing-3", "If a payment fails, Lumenfold retries the charge 3 times over 7 days. After "
                      "the last failed retry the account is moved to the Basic plan; video older "
                      "than 24 hours becomes unavailable and is kept for 14 days before it is "
                      "permanently deleted, so updating the card within that time restores it."),
        ("billing-4", "Prices are shown without sales tax. Customers in the European Union are "
                      "charged VAT at the rate of their country, for example 19% in Germany or 21% "
                      "in the Netherlands, and customers in the United Kingdom pay 20% VAT. "
                      "Business customers with a valid VAT number are invoiced under the "
                      "reverse-charge rule."),
        ("billing-5", "Upgrades take effect immediately and the price difference is prorated to the "
                      "day. Downgrades take effect at the end of the current billing period, and no "
                      "partial refund is issued for the remaining days."),
        ("billing-6", "Subscriptions are billed in US dollars, euros, British pounds or Canadian "
                      "dollars, depending on the country of the billing address. The currency of an "
                      "existing subscription cannot be changed; to switch currency, cancel the "
                      "subscription and start a new one after the current period ends."),
        ("billing-7", "Promo codes can be applied at checkout or under Settings > Billing > Redeem "
                      "code. Only one promo code can be used per order, and promo codes cannot be "
                      "combined with the student or nonprofit discount."),
    ]),
    ("Orders and shipping", [
        ("shipping-1", "Standard shipping is free on hardware orders over $35 within the contiguous "
                       "United States; smaller orders pay $5.95. Standard delivery takes 3 to 5 "
                       "business days. Express shipping costs $14.95 and delivers in 1 to 2 "
                       "business days for orders placed before 2:00 p.m. Eastern Time."),
        ("shipping-2", "Orders are packed at our warehouse in Reno, Nevada, Monday through Friday, "
                       "and leave the warehouse within 1 business day. A tracking number is emailed "
                       "as soon as the parcel is handed to the carrier, and the order status page "
                       "updates every 30 minutes."),
        ("shipping-3", "Lumenfold ships to the United States, Canada, the United Kingdom and the 27 "
                       "member states of the European Union. International shipping costs a flat "
                       "$19.95 and takes 7 to 14 business days. Import duties are prepaid for "
                       "orders to the European Union and the United Kingdom; customers in Canada "
                       "pay any duties to the carrier on delivery."),
        ("shipping-4", "For delivery by December 24, 2024, place standard orders by December 16, "
                       "2024 and express orders by December 20, 2024. The warehouse is closed on "
                       "November 28, 2024 for Thanksgiving and on December 25, 2024, and orders "
                       "placed on those days ship the next business day."),
        ("shipping-5", "Report a lost or damaged parcel within 14 days of the delivery date shown in "
                       "tracking, and we ship a replacement at no charge. Parcels worth more than "
                       "$200 require a signature on delivery."),
        ("shipping-6", "The shipping address of an order can be changed on the Orders page within 60 "
                       "minutes of placing it. After that, contact support; once an order has "
                       "shipped it cannot be redirected. P.O. boxes are accepted for standard "
                       "shipping only, not for express."),
    ]),
    ("Returns, refunds and warranty", [
        ("returns-1", "Hardware can be returned within 30 days of delivery for a full refund. "
                      "Unopened items carry no restocking fee; opened items that are not defective "
                      "carry a 15% restocking fee, and all accessories and the original packaging "
                      "must be included."),
        ("returns-2", "Defective items are returned with a free prepaid label. For change-of-mind "
                      "returns, a $7.95 return label fee is deducted from the refund. Refunds go to "
                      "the original payment method within 5 to 7 business days after the warehouse "
                      "receives the return."),
        ("returns-3", "Monthly subscriptions are not refundable, but they can be cancelled at any "
                      "time and stay active until the end of the paid month. Annual subscriptions "
                      "are refunded in full if cancelled within 14 days of purchase or renewal; "
                      "after 14 days there is no refund and the plan runs until the end of the "
                      "year."),
        ("returns-4", "Cameras and doorbells come with a 2-year limited warranty from the delivery "
                      "date, and the Hub has a 3-year limited warranty. Rechargeable batteries are "
                      "covered for 1 year. The warranty does not cover physical damage, or water "
                      "damage to the Cam Indoor, which is not weatherproof."),
        ("returns-5", "To make a warranty claim, submit the device serial number and a short video "
                      "or photo of the problem in the app. Approved claims get a replacement within "
                      "2 business days. With advance replacement, the price of the device is held "
                      "on your card and released when the faulty device arrives at our warehouse, "
                      "which must happen within 21 days."),
        ("returns-6", "Items delivered between November 1, 2024 and December 31, 2024 can be "
                      "returned until January 31, 2025. The usual 15% restocking fee for opened "
                      "items still applies during the extended holiday return period."),
    ]),
    ("Accounts", [
        ("accounts-1", "You need an email address and must be at least 18 years old to create a "
                       "Lumenfold account. One account can manage up to 3 homes, and each home can "
                       "be shared with up to 10 guest users. Guests can watch live video and "
                       "recordings but cannot delete recordings or change device settings."),
        ("accounts-2", "Passwords must be at least 12 characters long. A password reset link is "
                       "valid for 30 minutes. After 5 failed sign-in attempts in a row, the account "
                       "is locked for 15 minutes."),
        ("accounts-3", "To change the email address of an account, go to Settings > Account > Email. "
                       "The change takes effect once you click the confirmation link sent to the new "
                       "address, which must happen within 24 hours, and a notice is sent to the old "
                       "address."),
        ("accounts-4", "An account can be deleted from Settings > Account > Delete account. There is "
                       "a 7-day grace period in which the deletion can be cancelled; after that, all "
                       "data including recordings is permanently erased within 30 days. Active "
                       "subscriptions are cancelled when the deletion is requested."),
        ("accounts-5", "Free Basic accounts that have not signed in for 24 months are closed. Two "
                       "warning emails are sent first, 30 days and 7 days before the closure date. "
                       "Accounts with a paid plan are never closed for inactivity."),
        ("accounts-6", "Before you sell or give away a device, remove it from your account in the "
                       "app and then factory reset it by holding the reset button for 10 seconds "
                       "until the light blinks amber. A device that is still linked to an account "
                       "cannot be set up by a new owner."),
    ]),
    ("Security and privacy", [
        ("security-1", "Two-factor authentication (2FA) can use an authenticator app or SMS codes, "
                       "and each account gets 10 single-use backup codes. Since 2025-01-15, 2FA has "
                       "been mandatory for every Business and Enterprise account."),
        ("security-2", "Video is encrypted in transit with TLS 1.3 and at rest with AES-256. Plus and "
                       "Premier customers can turn on end-to-end encryption; with it enabled, video "
                       "cannot be viewed in the web browser and nobody at Lumenfold can view it."),
        ("security-3", "Lumenfold support staff can only view a customer's video after the customer "
                       "grants access in the app. Access lasts for 72 hours and can be revoked at "
                       "any time under Settings > Privacy > Support access."),
        ("security-4", "Report security vulnerabilities to security@lumenfold.example. We acknowledge "
                       "reports within 2 business days, and our bug bounty pays rewards from $250 to "
                       "$15,000 depending on severity. If a security incident affects customer data, "
                       "affected customers are notified within 72 hours."),
        ("security-5", "You get an email alert whenever your account signs in on a new device. "
                       "Sessions expire after 90 days without activity, and you can sign out of "
                       "every device at once under Settings > Security > Active sessions."),
        ("security-6", "The current privacy policy, version 4.2, took effect on October 1, 2024. "
                       "Lumenfold never sells customer data and does not use video recordings to "
                       "train AI models. A transparency report on government data requests is "
                       "published twice a year, in January and July."),
    ]),
    ("Data retention", [
        ("retention-1", "Recordings are kept according to the plan: 24 hours on Basic, 30 days on "
                        "Plus, 60 days on Premier and 90 days on Business. Older recordings are "
                        "deleted automatically. Saved clips are kept until you delete them, up to "
                        "2,000 saved clips per account."),
        ("retention-2", "Clips can be downloaded as MP4 files of up to 30 minutes each. A full data "
                        "export can be requested under Settings > Privacy > Export my data; the "
                        "export is ready within 48 hours and the download link stays valid for 7 "
                        "days."),
        ("retention-3", "When a paid plan is cancelled, the account returns to Basic at the end of "
                        "the paid period. Video older than 24 hours then stays hidden for 14 days, "
                        "so resubscribing within that time restores it, and is permanently deleted "
                        "after that."),
        ("retention-4", "Billing records are kept for 7 years to meet tax rules. Sign-in logs are "
                        "kept for 12 months and support chat transcripts for 18 months, after which "
                        "they are deleted."),
        ("retention-5", "Since 2023-09-01, video from customers in the European Union is stored only "
                        "in our Frankfurt data center. Video from all other customers is stored in "
                        "our Oregon and Virginia data centers."),
    ]),
    ("Support hours and contact", [
        ("support-1", "Chat and phone support are open from 7 a.m. to 10 p.m. Eastern Time, Monday "
                      "to Friday, and from 9 a.m. to 6 p.m. Eastern Time on Saturdays and Sundays. "
                      "The support phone number is 1-800-555-0142."),
        ("support-2", "Premier and Business customers get priority support with an average wait "
                      "under 5 minutes. Enterprise customers have a 24/7 phone line and a 1-hour "
                      "response time for critical issues."),
        ("support-3", "Email support is reached at support@lumenfold.example, and we reply within 1 "
                      "business day. Replies to existing tickets keep the same ticket number, and "
                      "tickets with no reply from the customer are closed after 10 days."),
        ("support-4", "Support is closed on January 1, July 4, Thanksgiving Day and December 25. On "
                      "December 24 and December 31, support closes early at 3 p.m. Eastern Time."),
        ("support-5", "Service status, including planned maintenance, is published at "
                      "status.lumenfold.example. Planned maintenance is announced at least 72 hours "
                      "in advance and usually takes place on Tuesdays between 1 a.m. and 3 a.m. "
                      "Eastern Time."),
    ]),
    ("Devices and setup", [
        ("devices-1", "Lumenfold cameras connect to 2.4 GHz or 5 GHz Wi-Fi. Each camera needs an "
                      "upload speed of at least 2 Mbps for 1080p video, or 4 Mbps for 2K video."),
        ("devices-2", "The Cam Outdoor battery lasts up to 6 months with default settings and "
                      "recharges fully in about 5 hours over USB-C. The app warns you when the "
                      "battery drops below 20%."),
        ("devices-3", "Firmware updates install automatically between 2 a.m. and 4 a.m. local time. "
                      "The first-generation Cam Indoor reaches end of support on 2025-06-30: it "
                      "keeps working, but it receives no security updates after that date. Owners "
                      "can trade it in for 40% off a new Cam Indoor until 2025-09-30."),
        ("devices-4", "The Cam Outdoor and the Doorbell Pro are rated IP65 and work from -4°F to "
                      "122°F (-20°C to 50°C). The Cam Indoor works from 32°F to 104°F (0°C to "
                      "40°C) and must be kept indoors."),
        ("devices-5", "The Hub has a microSD slot for cards up to 256 GB. During an internet outage, "
                      "cameras keep recording to the Hub, and the video is uploaded to the cloud "
                      "when the connection returns."),
        ("devices-6", "Hub firmware 5.0, released on February 10, 2025, added package detection and "
                      "lets Plus and Premier customers set up to 8 activity zones per camera."),
    ]),
]

PASSAGES: dict[str, str] = {pid: text for _, items in SECTIONS for pid, text in items}
PASSAGE_SECTION: dict[str, str] = {pid: pid.split("-")[0] for pid in PASSAGES}


def knowledge_markdown() -> str:
    parts = [TITLE, "", INTRO, ""]
    for heading, items in SECTIONS:
        parts += [f"## {heading}", ""]
        for _, text in items:
            parts += [text, ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------
# Topics: one fact cluster each, with the FAQ entry (if the FAQ covers it),
# user questions, the expected answer and hand-written answer variants.
#   nums / dates: (text in the expected or paraphrased answer, wrong replacement)
# --------------------------------------------------------------------------


def T(tid, suite, ctx, faq, qs, exp, para, miss, nums=(), dates=()):
    return {"id": tid, "suite": suite, "ctx": list(ctx), "faq": faq, "qs": list(qs),
            "exp": exp, "para": para, "miss": miss, "nums": list(nums), "dates": list(dates)}


TOPICS = [
    # ---------------- billing (plans, prices, payments) ----------------
    T("plus-price", "billing", ["plans-1"],
      "How much does the Plus plan cost?",
      ["How much is the Plus plan?", "what's the monthly price for lumenfold plus",
       "If I go with Plus, what will I pay each month and what do I get for it?"],
      "The Plus plan costs $9.99 per month or $99.99 per year. It keeps 30 days of video history "
      "for up to 5 cameras.",
      "Plus is $9.99 a month, or $99.99 if you pay for a whole year, and it stores 30 days of "
      "video from as many as 5 cameras.",
      "Plus is a paid plan that keeps your video history for several cameras.",
      nums=[("$9.99", "$11.99"), ("5 cameras", "8 cameras"), ("$99.99", "$89.99")]),
    T("premier-price", "billing", ["plans-2"],
      "What does Premier cost and what does it include?",
      ["What does the Premier plan cost?",
       "Which plan gives me continuous 24/7 recording, and how much is it?",
       "premier plan price + how long is the history"],
      "Premier costs $19.99 per month or $199.99 per year. It keeps 60 days of video history for "
      "unlimited cameras at one home and includes 24/7 continuous video recording (CVR).",
      "For $19.99 a month (or $199.99 yearly), Premier gives you 60 days of history with no limit "
      "on cameras at a single home, plus round-the-clock continuous recording.",
      "Premier is the top home plan and it includes continuous recording.",
      nums=[("$19.99", "$24.99"), ("60 days", "45 days")]),
    T("free-plan", "billing", ["plans-1"],
      "Is there a free plan?",
      ["Is there a free plan?", "Can I use the cameras without paying for a subscription?",
       "what do I get on the free tier"],
      "Yes. The Basic plan is free and keeps 24 hours of motion clips for up to 2 cameras.",
      "You can use Lumenfold without paying: the free Basic plan stores 24 hours of motion clips "
      "for a maximum of 2 cameras.",
      "Yes, there is a free plan called Basic.",
      nums=[("2 cameras", "4 cameras"), ("24 hours", "48 hours")]),
    T("business-price", "billing", ["plans-3"],
      "How is the Business plan priced?",
      ["How is the Business plan priced?",
       "We run a small office with 12 cameras - what would the business subscription cost per camera?",
       "minimum number of cameras for the Business plan?"],
      "The Business plan costs $6.50 per camera per month, with a minimum of 10 cameras, and keeps "
      "90 days of video history.",
      "Business is billed per camera: $6.50 for each camera every month, you need at least 10 "
      "cameras, and recordings are kept for 90 days.",
      "Business is billed per camera each month and keeps a longer history than the home plans.",
      nums=[("$6.50", "$5.50"), ("10 cameras", "5 cameras"), ("90 days", "120 days")]),
    T("enterprise-minimum", "billing", ["plans-3"],
      "What is the minimum for an Enterprise contract?",
      ["What is the minimum spend for Enterprise?",
       "Do you have an SLA for large customers, and what's the minimum commitment?",
       "enterprise contract minimum and uptime guarantee"],
      "Enterprise contracts are negotiated individually and carry a $10,000 enterprise minimum per "
      "year. They include a dedicated account manager and a 99.95% monthly uptime commitment.",
      "Enterprise deals are custom, but the yearly minimum is $10,000. You get your own account "
      "manager, and Lumenfold commits to 99.95% uptime each month.",
      "Enterprise contracts are negotiated individually and come with a dedicated account manager.",
      nums=[("$10,000", "$25,000"), ("99.95%", "99.99%")]),
    T("plus-price-change", "billing", ["plans-4", "plans-1"],
      "Why did my Plus price go up?",
      ["Why did my Plus price go up?", "When did Plus get more expensive?",
       "I was paying $8.99 for Plus and now I'm charged $9.99 - when did this change happen?"],
      "On March 3, 2024 the monthly Plus price rose from $8.99 to $9.99. Customers who subscribed "
      "before that date kept the old price until their first renewal on or after June 1, 2024.",
      "The Plus monthly price went from $8.99 to $9.99 on March 3, 2024. If you were already "
      "subscribed before then, you stayed on $8.99 until your first renewal on or after June 1, 2024.",
      "The price of the Plus plan was increased in 2024.",
      nums=[("$8.99", "$7.99")],
      dates=[("March 3, 2024", "March 13, 2024"), ("June 1, 2024", "July 1, 2024")]),
    T("student-discount", "billing", ["plans-5"],
      "Is there a discount for students?",
      ["Do you offer a student discount?", "Do nonprofits get a cheaper rate?",
       "I'm at university, can I get Premier for less?"],
      "Yes. Students and registered nonprofit organizations get 25% off Plus and Premier, and the "
      "discount must be re-verified every 12 months.",
      "Students and registered nonprofits qualify for a 25% discount on both Plus and Premier; you "
      "just need to verify your status again every 12 months.",
      "Yes, students and nonprofits can get a discount on the paid home plans.",
      nums=[("25%", "30%"), ("12 months", "24 months")]),
    T("yearly-savings", "billing", ["plans-5", "plans-1"],
      None,
      ["How much do I save by paying yearly?", "is annual billing cheaper than monthly?"],
      "Paying yearly instead of monthly saves about 17% on Plus and Premier.",
      "Choosing annual billing for Plus or Premier works out roughly 17% cheaper than paying month "
      "by month.",
      "Annual billing is cheaper than monthly billing.",
      nums=[("17%", "25%")]),
    T("free-trial", "billing", ["plans-6"],
      "Is there a free trial?",
      ["Is there a free trial?", "Will I be charged automatically when the Premier trial ends?",
       "how long is the trial and do you warn me before billing"],
      "Every new account can start one 30-day free trial of Premier. You are not charged if you "
      "cancel before it ends, and a reminder email is sent 3 days before the first charge.",
      "New accounts get a single 30-day Premier trial. Cancel before the trial is over and you pay "
      "nothing; we also email you 3 days before the first payment.",
      "Yes, new accounts can try Premier for free.",
      nums=[("30-day", "14-day"), ("3 days", "7 days")]),
    T("payment-methods", "billing", ["billing-1"],
      "What payment methods do you accept?",
      ["What payment methods do you accept?", "Can I pay by bank transfer for my home plan?",
       "which ways can i pay"],
      "Lumenfold accepts credit cards, debit cards, Lumenfold gift cards and digital wallet "
      "payments in the app. Bank transfer is available only for Business and Enterprise customers, "
      "whose invoices are payable within 30 days.",
      "You can pay with a credit or debit card, a Lumenfold gift card, or a digital wallet in the "
      "app. Paying by bank transfer is reserved for Business and Enterprise accounts, which get "
      "invoices payable within 30 days.",
      "You can pay by card or with a gift card.",
      nums=[("30 days", "45 days")]),
    T("gift-cards", "billing", ["billing-1"],
      "Do gift cards expire?",
      ["Do Lumenfold gift cards expire?", "what values do your gift cards come in"],
      "No. Lumenfold gift cards never expire, and they are sold in amounts from $25 to $500.",
      "Gift cards don't have an expiry date. You can buy them for any amount between $25 and $500.",
      "Lumenfold gift cards never expire.",
      nums=[("$500", "$1,000"), ("$25", "$10")]),
    T("renewal-date", "billing", ["billing-2"],
      "When will I be charged each month?",
      ["When will I be charged each month?",
       "I signed up on the 31st, what happens in months with 30 days?",
       "what day does my subscription renew"],
      "Monthly plans renew on the same day of the month as your original sign-up. If that day does "
      "not exist in a month, such as the 31st, you are charged on the last day of that month. A "
      "receipt is emailed within 1 hour.",
      "Your renewal date matches the day you first signed up. In shorter months that don't have "
      "that day (say the 31st), the charge happens on the month's final day, and you get an emailed "
      "receipt within 1 hour.",
      "You are charged once a month.",
      nums=[("1 hour", "24 hours")]),
    T("failed-payment", "billing", ["billing-3", "retention-3"],
      "What happens if my payment fails?",
      ["What happens if my payment fails?",
       "My card expired and the renewal didn't go through. Will I lose my recordings?",
       "how many times do you retry a declined card"],
      "Lumenfold retries the charge 3 times over 7 days. After the last failed retry your account "
      "moves to Basic; video older than 24 hours becomes unavailable and is kept for 14 days, so "
      "updating your card within that time restores it.",
      "A failed payment is retried 3 times across 7 days. If all retries fail you drop to the "
      "Basic plan, and anything older than 24 hours is hidden but kept for 14 days, so fix your "
      "card in that window and it comes back.",
      "We retry the payment, and if it keeps failing your account is moved to the Basic plan.",
      nums=[("3 times", "5 times"), ("14 days", "30 days")]),
    T("vat", "billing", ["billing-4"],
      "Do your prices include VAT?",
      ["Do your prices include VAT?",
       "I live in Germany, how much tax gets added to my subscription?",
       "why was I charged more than the listed price in the UK"],
      "No, prices are shown without sales tax. EU customers pay VAT at their country's rate, for "
      "example 19% in Germany or 21% in the Netherlands, and UK customers pay 20% VAT.",
      "Listed prices exclude tax. In the EU we add your country's VAT rate (19% in Germany, 21% in "
      "the Netherlands), and in the UK 20% VAT is added.",
      "Prices do not include tax, so VAT is added depending on where you live.",
      nums=[("19%", "16%"), ("20%", "17.5%")]),
    T("plan-changes", "billing", ["billing-5"],
      None,
      ["How do upgrades and downgrades work?",
       "If I move from Premier down to Plus do I get money back?",
       "when does a plan change take effect"],
      "Upgrades take effect immediately and the price difference is prorated to the day. "
      "Downgrades take effect at the end of the current billing period, with no partial refund for "
      "the remaining days.",
      "When you upgrade, the new plan starts right away and you only pay the day-by-day "
      "difference. A downgrade starts when your current billing period ends, and the unused days "
      "aren't refunded.",
      "Upgrades are immediate and downgrades happen later."),
    T("currency", "billing", ["billing-6"],
      None,
      ["I moved from Canada to France — can my subscription be billed in euros now?",
       "Can I change the currency I'm billed in?"],
      "Subscriptions are billed in US dollars, euros, British pounds or Canadian dollars, based on "
      "your billing address. The currency of an existing subscription cannot be changed; to "
      "switch, cancel and start a new subscription after the current period ends.",
      "We bill in USD, EUR, GBP or CAD depending on your billing country. An active subscription's "
      "currency is fixed, so you'd have to cancel and resubscribe once the current period is over.",
      "The currency of a subscription cannot be changed."),
    T("promo-codes", "billing", ["billing-7", "plans-5"],
      "Can I combine a promo code with the student discount?",
      ["Can I use a promo code together with my student discount?", "where do I enter a promo code",
       "Can I stack two coupon codes on one order?"],
      "Enter promo codes at checkout or under Settings > Billing > Redeem code. Only one promo code "
      "can be used per order, and it cannot be combined with the student or nonprofit discount.",
      "You can redeem a code at checkout or in Settings > Billing > Redeem code. It's one code per "
      "order, and codes don't stack with the student or nonprofit discount.",
      "Promo codes can be redeemed at checkout.",
      nums=[("Only one promo code", "Up to two promo codes")]),
    # ---------------- devices (hardware, setup) ----------------
    T("hardware-prices", "devices", ["about-2"],
      "How much does the Doorbell Pro cost?",
      ["How much does the Doorbell Pro cost?", "price list for your cameras and doorbell?",
       "what's the doorbell going for these days"],
      "The Lumenfold Doorbell Pro costs $179.99. For comparison, the Cam Indoor is $59.99, the Cam "
      "Outdoor is $129.99 and the Hub is $89.00.",
      "The Doorbell Pro sells for $179.99. The other devices are $59.99 for the Cam Indoor, $129.99 "
      "for the Cam Outdoor and $89.00 for the Hub.",
      "The Doorbell Pro is priced higher than the cameras.",
      nums=[("$179.99", "$149.99"), ("$129.99", "$119.99")]),
    T("hub-capacity", "devices", ["about-2", "devices-5"],
      "How many cameras can one Hub handle?",
      ["How many cameras can one Hub handle?", "is there a limit on devices per hub",
       "I want 20 cameras — do I need two hubs?"],
      "A single Lumenfold Hub can connect up to 16 cameras and doorbells.",
      "Each Hub supports as many as 16 devices in total, counting both cameras and doorbells.",
      "A Hub can connect several cameras and doorbells.",
      nums=[("16", "12")]),
    T("bundles", "devices", ["about-3", "about-2"],
      None,
      ["Do you sell bundles?",
       "What's in the Starter Bundle and is it cheaper than buying things one by one?"],
      "The Starter Bundle, with one Hub and two Cam Indoor units, costs $179.00, about 14% less "
      "than buying the items separately. The Perimeter Bundle, with one Hub, three Cam Outdoor "
      "units and one Doorbell Pro, costs $549.00.",
      "There are two bundles: Starter (a Hub plus two Cam Indoor units) for $179.00, roughly 14% "
      "cheaper than separate items, and Perimeter (a Hub, three Cam Outdoor units and a Doorbell "
      "Pro) for $549.00.",
      "Yes, we sell the Starter Bundle and the Perimeter Bundle.",
      nums=[("$179.00", "$199.00"), ("$549.00", "$499.00")]),
    T("wifi", "devices", ["devices-1"],
      "What Wi-Fi do the cameras need?",
      ["What Wi-Fi do the cameras need?", "how much upload bandwidth per camera for 2K",
       "does it work on 5ghz"],
      "Lumenfold cameras connect to 2.4 GHz or 5 GHz Wi-Fi. Each camera needs an upload speed of "
      "at least 2 Mbps for 1080p video, or 4 Mbps for 2K video.",
      "The cameras work with both 2.4 GHz and 5 GHz networks. Plan on at least 2 Mbps of upload "
      "per camera for 1080p, or 4 Mbps for 2K.",
      "The cameras work with standard home Wi-Fi.",
      nums=[("2 Mbps", "1 Mbps"), ("4 Mbps", "8 Mbps")]),
    T("battery", "devices", ["devices-2"],
      "How long does the Cam Outdoor battery last?",
      ["How long does the Cam Outdoor battery last?", "how long to charge the outdoor camera",
       "battery life outdoor cam"],
      "The Cam Outdoor battery lasts up to 6 months with default settings and recharges fully in "
      "about 5 hours over USB-C.",
      "On default settings, expect up to 6 months per charge from the Cam Outdoor; a full recharge "
      "over USB-C takes around 5 hours.",
      "The Cam Outdoor battery lasts several months and can be recharged.",
      nums=[("6 months", "12 months"), ("5 hours", "2 hours")]),
    T("firmware-window", "devices", ["devices-3"],
      None,
      ["When do firmware updates install?", "my camera went offline at 3am, was it updating?"],
      "Firmware updates install automatically between 2 a.m. and 4 a.m. local time.",
      "Updates are automatic and happen overnight, between 2 a.m. and 4 a.m. in your local time.",
      "Firmware updates install automatically.",
      nums=[("2 a.m.", "1 a.m.")]),
    T("gen1-end-of-support", "devices", ["devices-3"],
      "Is the first-generation Cam Indoor still supported?",
      ["Is the first-generation Cam Indoor still supported?",
       "will my old gen 1 indoor camera stop working", "trade-in deal for old cameras?"],
      "The first-generation Cam Indoor reaches end of support on 2025-06-30. It keeps working but "
      "receives no security updates after that date. Owners can trade it in for 40% off a new Cam "
      "Indoor until 2025-09-30.",
      "Support for the gen-1 Cam Indoor ends on 2025-06-30; it will still work, just without "
      "security updates from then on. Until 2025-09-30 you can trade it in and get 40% off a new "
      "Cam Indoor.",
      "The first-generation Cam Indoor will stop getting updates, and there is a trade-in offer.",
      nums=[("40%", "50%")],
      dates=[("2025-06-30", "2025-12-31"), ("2025-09-30", "2025-10-31")]),
    T("weatherproof", "devices", ["devices-4"],
      None,
      ["Can the outdoor camera handle freezing weather?", "operating temperature of the doorbell",
       "is the outdoor cam waterproof"],
      "Yes. The Cam Outdoor and Doorbell Pro are rated IP65 and work from -4°F to 122°F (-20°C to "
      "50°C).",
      "They're built for it: both the Cam Outdoor and the Doorbell Pro carry an IP65 rating and "
      "operate between -4°F and 122°F (-20°C to 50°C).",
      "Yes, the outdoor devices are weatherproof.",
      nums=[("IP65", "IP67"), ("-4°F", "-22°F")]),
    T("offline-recording", "devices", ["devices-5"],
      "Do cameras record when the internet is down?",
      ["Do the cameras still record when the internet is down?",
       "what size microSD card does the hub take",
       "Our internet went out for a day, did we lose footage?"],
      "Yes. During an internet outage, cameras keep recording to the Hub, which takes microSD cards "
      "up to 256 GB, and the video is uploaded to the cloud when the connection returns.",
      "Yes: if your internet drops, the cameras record to the Hub (microSD up to 256 GB) and "
      "everything uploads once you're back online.",
      "Yes, the cameras keep recording during an outage.",
      nums=[("256 GB", "128 GB")]),
    T("firmware-5", "devices", ["devices-6"],
      None,
      ["When did package detection come out?", "how many activity zones can I set per camera?"],
      "Hub firmware 5.0, released on February 10, 2025, added package detection and lets Plus and "
      "Premier customers set up to 8 activity zones per camera.",
      "Package detection arrived with Hub firmware 5.0 on February 10, 2025, which also allows Plus "
      "and Premier subscribers up to 8 activity zones per camera.",
      "Package detection was added in a Hub firmware update.",
      nums=[("8 activity zones", "12 activity zones")],
      dates=[("February 10, 2025", "February 1, 2025")]),
    # ---------------- shipping ----------------
    T("shipping-cost", "shipping", ["shipping-1"],
      "How much does shipping cost?",
      ["How much is shipping?", "Is shipping free?",
       "My order is $30, do I have to pay for delivery?"],
      "Standard shipping is free on orders over $35 within the contiguous United States; smaller "
      "orders pay $5.95 and arrive in 3 to 5 business days. Express shipping costs $14.95 and "
      "delivers in 1 to 2 business days if you order before 2:00 p.m. Eastern Time.",
      "Orders above $35 ship free with standard delivery in the contiguous US; below that it's "
      "$5.95, and standard takes 3 to 5 business days. Express is $14.95 and gets there in 1 to 2 "
      "business days when you order before 2:00 p.m. Eastern.",
      "Standard shipping is free on larger orders, and express shipping is also available.",
      nums=[("$35", "$50"), ("$5.95", "$7.95"), ("$14.95", "$19.95")]),
    T("express-cutoff", "shipping", ["shipping-1"],
      None,
      ["What is the cutoff time for express shipping?",
       "if I order express at 3pm will it still arrive in two days?"],
      "Express orders placed before 2:00 p.m. Eastern Time are delivered in 1 to 2 business days. "
      "Express shipping costs $14.95.",
      "To get the 1 to 2 business day express delivery, order before 2:00 p.m. Eastern Time; "
      "express costs $14.95.",
      "Express shipping is faster than standard shipping.",
      nums=[("2:00 p.m.", "4:00 p.m."), ("$14.95", "$12.95")]),
    T("dispatch", "shipping", ["shipping-2"],
      "When will my order ship?",
      ["When will my order ship?", "where do you ship from and how fast is it dispatched",
       "I haven't got a tracking number yet, when will I get it?"],
      "Orders are packed in our Reno, Nevada warehouse Monday through Friday and leave within 1 "
      "business day. You get a tracking number by email as soon as the parcel is handed to the "
      "carrier.",
      "We pack orders on weekdays at the Reno, Nevada warehouse and they go out within 1 business "
      "day. The tracking number is emailed the moment the carrier picks the parcel up.",
      "Your order ships from our warehouse and you'll get a tracking number.",
      nums=[("1 business day", "3 business days")]),
    T("international", "shipping", ["shipping-3"],
      "Do you ship internationally?",
      ["Do you ship internationally?", "Can I order from Canada and will I pay customs?",
       "do you deliver to Australia"],
      "Lumenfold ships to the United States, Canada, the United Kingdom and the 27 EU member "
      "states. International shipping costs a flat $19.95 and takes 7 to 14 business days. Duties "
      "are prepaid for the EU and UK; Canadian customers pay duties on delivery.",
      "We ship to the US, Canada, the UK and all 27 EU countries. Outside the US it's a flat $19.95 "
      "and takes 7 to 14 business days; import duties are already paid for EU and UK orders, while "
      "in Canada you pay them to the carrier.",
      "Yes, we ship to several countries outside the United States.",
      nums=[("$19.95", "$24.95"), ("7 to 14", "10 to 20")]),
    T("holiday-cutoff", "shipping", ["shipping-4"],
      "What are the holiday shipping deadlines?",
      ["What are the holiday shipping deadlines?",
       "When's the last day to order so it arrives before Christmas Eve?",
       "latest express order date for christmas delivery"],
      "For delivery by December 24, 2024, place standard orders by December 16, 2024 and express "
      "orders by December 20, 2024.",
      "To have it by December 24, 2024, order with standard shipping no later than December 16, "
      "2024, or with express by December 20, 2024.",
      "Order early in December to get your parcel before Christmas.",
      dates=[("December 16, 2024", "December 18, 2024"),
             ("December 20, 2024", "December 22, 2024")]),
    T("warehouse-closures", "shipping", ["shipping-4"],
      None,
      ["Is the warehouse open on Thanksgiving?", "If I order on Christmas Day, when will it ship?"],
      "The warehouse is closed on November 28, 2024 for Thanksgiving and on December 25, 2024. "
      "Orders placed on those days ship the next business day.",
      "We don't ship on November 28, 2024 (Thanksgiving) or December 25, 2024; anything ordered on "
      "those days goes out on the following business day.",
      "The warehouse closes on some holidays.",
      dates=[("November 28, 2024", "November 27, 2024"),
             ("December 25, 2024", "December 26, 2024")]),
    T("lost-parcel", "shipping", ["shipping-5"],
      "My package was lost or damaged. What should I do?",
      ["My package was lost or damaged, what should I do?",
       "the box arrived crushed and the camera is broken",
       "tracking says delivered but nothing came"],
      "Report a lost or damaged parcel within 14 days of the delivery date shown in tracking, and "
      "we will ship a replacement at no charge.",
      "Let us know within 14 days of the tracking delivery date that the parcel was lost or "
      "damaged, and we'll send a free replacement.",
      "Contact us and we will send you a replacement.",
      nums=[("14 days", "30 days")]),
    T("signature", "shipping", ["shipping-5"],
      None,
      ["Why does my delivery need a signature?", "do I have to be home to sign for my order"],
      "Parcels worth more than $200 require a signature on delivery.",
      "Any parcel valued over $200 has to be signed for when it's delivered.",
      "Some parcels require a signature.",
      nums=[("$200", "$500")]),
    T("address-change", "shipping", ["shipping-6"],
      "Can I change my shipping address after ordering?",
      ["Can I change my shipping address after ordering?",
       "I typed the wrong address!! can you fix it",
       "How long do I have to edit the delivery address?"],
      "You can change the shipping address on the Orders page within 60 minutes of placing the "
      "order. After that, contact support; once the order has shipped it cannot be redirected.",
      "For the first 60 minutes after ordering you can edit the address yourself on the Orders "
      "page. Later than that, get in touch with support, though once it has shipped we can't "
      "reroute it.",
      "You can change the address, but not after the order has shipped.",
      nums=[("60 minutes", "30 minutes")]),
    T("po-boxes", "shipping", ["shipping-6"],
      "Do you ship to P.O. boxes?",
      ["Do you ship to P.O. boxes?", "can express go to a po box"],
      "Yes, P.O. boxes are accepted for standard shipping only, not for express.",
      "We deliver to P.O. boxes with standard shipping, but express can't go to a P.O. box.",
      "Yes, we ship to P.O. boxes."),
    # ---------------- returns ----------------
    T("return-policy", "returns", ["returns-1"],
      "What is your return policy?",
      ["What is your return policy?", "Can I return a camera I already opened?",
       "how many days do i have to send it back"],
      "Hardware can be returned within 30 days of delivery for a full refund. Unopened items have "
      "no restocking fee; opened items that are not defective carry a 15% restocking fee, and all "
      "accessories and the original packaging must be included.",
      "You have 30 days from delivery to return hardware for a full refund. There's no fee if it's "
      "unopened, but opened, non-defective items get a 15% restocking fee, and you need to include "
      "the accessories and original box.",
      "You can return hardware within 30 days.",
      nums=[("30 days", "60 days"), ("15%", "20%")]),
    T("return-shipping", "returns", ["returns-2"],
      "Who pays for return shipping?",
      ["Who pays for return shipping?",
       "do I have to pay to send back something I just don't want anymore?"],
      "Defective items are returned with a free prepaid label. For change-of-mind returns, a $7.95 "
      "return label fee is deducted from the refund.",
      "If the item is defective, the return label is free. If you simply changed your mind, we "
      "take $7.95 for the label out of your refund.",
      "Return shipping is free for defective items.",
      nums=[("$7.95", "$5.95")]),
    T("refund-timing", "returns", ["returns-2"],
      "How long does a refund take?",
      ["How long does a refund take?",
       "I sent my doorbell back last week, when do I get my money?", "where does the refund go"],
      "Refunds go to the original payment method within 5 to 7 business days after the warehouse "
      "receives the return.",
      "Once the warehouse has your return, the money goes back to the card or method you paid with "
      "in 5 to 7 business days.",
      "The refund goes back to your original payment method.",
      nums=[("5 to 7", "10 to 14")]),
    T("subscription-refund", "returns", ["returns-3"],
      "Can I get a refund on my subscription?",
      ["Can I get a refund on my subscription?",
       "I renewed my annual Premier plan by accident 3 days ago, can I get my money back?",
       "refund for monthly plan?"],
      "Monthly subscriptions are not refundable, but you can cancel at any time and keep the plan "
      "until the end of the paid month. Annual subscriptions are refunded in full if cancelled "
      "within 14 days of purchase or renewal; after that there is no refund.",
      "Monthly plans aren't refunded, though you can cancel whenever you like and keep access until "
      "the paid month ends. Yearly plans get a full refund if you cancel within 14 days of buying "
      "or renewing; past 14 days, no refund.",
      "Monthly plans are not refundable.",
      nums=[("14 days", "30 days")]),
    T("warranty", "returns", ["returns-4"],
      "How long is the warranty?",
      ["How long is the warranty?",
       "My Hub stopped working after two and a half years, is it still under warranty?",
       "is the battery covered by warranty"],
      "Cameras and doorbells have a 2-year limited warranty from the delivery date, and the Hub has "
      "a 3-year limited warranty. Rechargeable batteries are covered for 1 year.",
      "You get 2 years of limited warranty on cameras and doorbells, counted from delivery, and 3 "
      "years on the Hub. Rechargeable batteries are covered for 1 year.",
      "All Lumenfold devices come with a limited warranty.",
      nums=[("2-year", "1-year"), ("3-year", "5-year")]),
    T("water-damage", "returns", ["returns-4", "devices-4"],
      None,
      ["I left my indoor camera on the patio and the rain killed it. Is that covered?",
       "does the warranty cover water damage"],
      "No. The warranty does not cover physical damage or water damage to the Cam Indoor, which is "
      "not weatherproof and must be kept indoors.",
      "Unfortunately not: the Cam Indoor isn't weatherproof, it's meant to stay inside, and the "
      "warranty excludes water damage to it as well as physical damage.",
      "No, that is not covered by the warranty."),
    T("warranty-claim", "returns", ["returns-5"],
      None,
      ["How do I make a warranty claim?", "What do you need from me to replace a faulty camera?"],
      "Submit the device serial number and a short video or photo of the problem in the app. "
      "Approved claims get a replacement within 2 business days.",
      "In the app, send us the serial number plus a quick photo or video showing the issue. Once "
      "approved, the replacement ships within 2 business days.",
      "You can make a warranty claim in the app.",
      nums=[("2 business days", "5 business days")]),
    T("advance-replacement", "returns", ["returns-5"],
      None,
      ["Can you send the replacement before I return the broken one?",
       "how does advance replacement work"],
      "With advance replacement, the price of the device is held on your card and released when "
      "the faulty device arrives at our warehouse, which must happen within 21 days.",
      "We hold the device's price on your card, ship the replacement first, and release the hold "
      "when your faulty unit reaches our warehouse. It has to arrive within 21 days.",
      "Advance replacement places a temporary hold on your card.",
      nums=[("21 days", "30 days")]),
    T("holiday-returns", "returns", ["returns-6", "returns-1"],
      "Is there an extended return window for the holidays?",
      ["Is there an extended return window for the holidays?",
       "I got a camera as a Christmas gift, can I still return it in January?",
       "holiday return deadline"],
      "Yes. Items delivered between November 1, 2024 and December 31, 2024 can be returned until "
      "January 31, 2025. The 15% restocking fee for opened items still applies.",
      "Anything delivered from November 1, 2024 through December 31, 2024 can come back until "
      "January 31, 2025, but opened items still carry the 15% restocking fee.",
      "Yes, the return window is extended for holiday purchases.",
      nums=[("15%", "10%")],
      dates=[("January 31, 2025", "January 15, 2025"), ("November 1, 2024", "November 15, 2024")]),
    # ---------------- accounts ----------------
    T("account-requirements", "accounts", ["accounts-1"],
      "What do I need to create an account?",
      ["What do I need to create an account?", "can my 16 year old make her own account",
       "minimum age to sign up"],
      "You need an email address and must be at least 18 years old to create a Lumenfold account.",
      "All it takes is an email address, but you have to be 18 or older to open an account.",
      "You need an email address to sign up.",
      nums=[("18", "16")]),
    T("sharing", "accounts", ["accounts-1"],
      "How many people can I share my cameras with?",
      ["How many people can I share my cameras with?",
       "can my roommate delete recordings if I share access", "max homes per account"],
      "One account can manage up to 3 homes, and each home can be shared with up to 10 guest "
      "users. Guests can watch live video and recordings but cannot delete recordings or change "
      "device settings.",
      "You can have up to 3 homes on one account and invite as many as 10 guests to each. Guests "
      "are able to view live and recorded video, but they can't delete anything or change settings.",
      "You can share each home with guest users, who can watch video.",
      nums=[("10 guest users", "5 guest users"), ("3 homes", "5 homes")]),
    T("lockout", "accounts", ["accounts-2"],
      "Why is my account locked?",
      ["Why is my account locked?",
       "i typed my password wrong a bunch of times and now i can't log in",
       "how long is the lockout"],
      "After 5 failed sign-in attempts in a row, the account is locked for 15 minutes. Passwords "
      "must be at least 12 characters long.",
      "Five wrong passwords in a row lock the account for 15 minutes, after which you can try "
      "again. Keep in mind passwords need 12 or more characters.",
      "Your account is locked temporarily after too many failed sign-in attempts.",
      nums=[("15 minutes", "30 minutes"), ("12 characters", "8 characters")]),
    T("reset-link", "accounts", ["accounts-2"],
      None,
      ["How long is a password reset link valid?",
       "my reset email link says expired, I clicked it after an hour"],
      "A password reset link is valid for 30 minutes.",
      "Reset links stop working after 30 minutes, so request a new one if yours has expired.",
      "Password reset links expire after a while.",
      nums=[("30 minutes", "24 hours")]),
    T("change-email", "accounts", ["accounts-3"],
      "How do I change my email address?",
      ["How do I change my email address?",
       "I no longer use my old work email, how do I update the login email?"],
      "Go to Settings > Account > Email. The change takes effect once you click the confirmation "
      "link sent to the new address within 24 hours, and a notice is sent to your old address.",
      "Open Settings > Account > Email and enter the new address. We send a confirmation link "
      "there that you must click within 24 hours, and your old address gets a notification.",
      "You can change your email address in the account settings.",
      nums=[("24 hours", "48 hours")]),
    T("delete-account", "accounts", ["accounts-4"],
      "How do I delete my account?",
      ["How do I delete my account?", "if I delete my account can I change my mind?",
       "how long until my data is gone after closing the account"],
      "Go to Settings > Account > Delete account. You have a 7-day grace period to cancel; after "
      "that, all data including recordings is permanently erased within 30 days. Active "
      "subscriptions are cancelled when you request deletion.",
      "Use Settings > Account > Delete account. For 7 days you can still undo it; after that "
      "everything, recordings included, is permanently wiped within 30 days, and any active "
      "subscription ends as soon as you ask.",
      "You can delete your account from the settings, and your data will be erased.",
      nums=[("7-day", "14-day"), ("30 days", "90 days")]),
    T("inactive-accounts", "accounts", ["accounts-5"],
      None,
      ["Will my account be deleted if I don't use it?",
       "I haven't logged in for ages, is my free account still there?"],
      "Free Basic accounts that have not signed in for 24 months are closed, after warning emails "
      "30 days and 7 days before closure. Accounts with a paid plan are never closed for "
      "inactivity.",
      "Only free Basic accounts are closed for inactivity, after 24 months without a sign-in, and "
      "we email you 30 days and again 7 days beforehand. Paid accounts are never closed this way.",
      "Inactive free accounts may eventually be closed.",
      nums=[("24 months", "12 months")]),
    T("factory-reset", "accounts", ["accounts-6"],
      "How do I factory reset a camera before selling it?",
      ["How do I factory reset a camera before selling it?",
       "I bought a used doorbell and it says it's linked to another account",
       "reset button how long"],
      "Remove the device from your account in the app, then factory reset it by holding the reset "
      "button for 10 seconds until the light blinks amber.",
      "First unlink it from your account in the app. Then press and hold the reset button for 10 "
      "seconds, until the light flashes amber.",
      "Remove it from your account and reset it.",
      nums=[("10 seconds", "30 seconds")]),
    # ---------------- security ----------------
    T("two-factor", "security", ["security-1"],
      "Do you support two-factor authentication?",
      ["Do you support two-factor authentication?", "can I use an authenticator app for 2FA",
       "how many backup codes do I get"],
      "Yes. Two-factor authentication can use an authenticator app or SMS codes, and each account "
      "gets 10 single-use backup codes.",
      "Yes, you can set up 2FA with either an authenticator app or text-message codes, and you'll "
      "receive 10 one-time backup codes.",
      "Yes, two-factor authentication is supported.",
      nums=[("10 single-use", "5 single-use"), ("10 one-time", "6 one-time")]),
    T("two-factor-mandatory", "security", ["security-1"],
      "Is 2FA mandatory for business accounts?",
      ["Is 2FA required for business accounts?",
       "when did you start forcing two-factor on our company account?"],
      "Yes. Since 2025-01-15, two-factor authentication has been mandatory for every Business and "
      "Enterprise account.",
      "It is: every Business and Enterprise account has had to use 2FA since 2025-01-15.",
      "Yes, Business and Enterprise accounts must use two-factor authentication.",
      dates=[("2025-01-15", "2025-02-15")]),
    T("encryption", "security", ["security-2"],
      "Is my video encrypted?",
      ["Is my video encrypted?", "what encryption do you use for stored footage",
       "can i turn on end to end encryption on the free plan"],
      "Yes. Video is encrypted in transit with TLS 1.3 and at rest with AES-256. Plus and Premier "
      "customers can also turn on end-to-end encryption.",
      "Your video is protected with TLS 1.3 while it travels and AES-256 when it is stored. On Plus "
      "or Premier you can additionally enable end-to-end encryption.",
      "Yes, your video is encrypted.",
      nums=[("AES-256", "AES-128"), ("TLS 1.3", "TLS 1.1")]),
    T("e2e-browser", "security", ["security-2"],
      None,
      ["Why can't I watch my clips in the browser anymore after turning on end-to-end encryption?",
       "With E2E on, can Lumenfold employees see my footage?"],
      "With end-to-end encryption enabled, video cannot be viewed in the web browser and nobody at "
      "Lumenfold can view it.",
      "That's expected: once end-to-end encryption is on, the web browser can't play your video, "
      "and no one at Lumenfold is able to see it either.",
      "End-to-end encryption limits where your video can be viewed."),
    T("support-access", "security", ["security-3"],
      "Can support staff see my videos?",
      ["Can support staff see my videos?",
       "How long does the support team keep access to my cameras?"],
      "Only if you grant access in the app. Access lasts for 72 hours and can be revoked at any "
      "time under Settings > Privacy > Support access.",
      "Support can only see your video after you give permission in the app; that access expires "
      "after 72 hours, and you can withdraw it sooner in Settings > Privacy > Support access.",
      "Support staff need your permission to view your video.",
      nums=[("72 hours", "7 days")]),
    T("vulnerability-report", "security", ["security-4"],
      "How do I report a security vulnerability?",
      ["How do I report a security vulnerability?", "do you have a bug bounty? how much does it pay",
       "found a bug in your API auth, who do I tell"],
      "Report vulnerabilities to security@lumenfold.example. Reports are acknowledged within 2 "
      "business days, and the bug bounty pays from $250 to $15,000 depending on severity.",
      "Email security@lumenfold.example; we'll acknowledge within 2 business days. Bounties range "
      "from $250 up to $15,000 based on severity.",
      "Send vulnerability reports to security@lumenfold.example.",
      nums=[("$15,000", "$50,000"), ("$250", "$100")]),
    T("breach-notice", "security", ["security-4"],
      None,
      ["Will you tell me if my data is involved in a breach?",
       "how fast do you notify customers about a data breach"],
      "If a security incident affects customer data, affected customers are notified within 72 "
      "hours.",
      "Yes. Customers whose data is affected by a security incident hear from us within 72 hours.",
      "Affected customers are notified of security incidents.",
      nums=[("72 hours", "30 days")]),
    T("sessions", "security", ["security-5"],
      None,
      ["How do I sign out of all devices?", "I think someone else is logged into my account",
       "how long do login sessions last"],
      "Go to Settings > Security > Active sessions to sign out of every device at once. Sessions "
      "also expire after 90 days without activity, and you get an email alert whenever your "
      "account signs in on a new device.",
      "Settings > Security > Active sessions lets you log out everywhere in one go. Idle sessions "
      "end on their own after 90 days, and any sign-in from a new device triggers an email alert.",
      "You can sign out of all devices in the security settings.",
      nums=[("90 days", "30 days")]),
    T("privacy-policy", "security", ["security-6"],
      "Do you sell my data?",
      ["Do you sell my data?", "Are my camera recordings used to train AI?",
       "when was the privacy policy last updated"],
      "No. Lumenfold never sells customer data and does not use video recordings to train AI "
      "models. The current privacy policy, version 4.2, took effect on October 1, 2024.",
      "We never sell customer data, and your recordings are not used to train AI models. Privacy "
      "policy version 4.2 has been in force since October 1, 2024.",
      "No, Lumenfold does not sell customer data.",
      nums=[("4.2", "3.1")],
      dates=[("October 1, 2024", "October 1, 2023")]),
    T("transparency-report", "security", ["security-6"],
      None,
      ["Do you publish a transparency report?",
       "how often do you report on police requests for footage"],
      "Lumenfold publishes a transparency report on government data requests twice a year, in "
      "January and July.",
      "Yes, twice a year: every January and July we publish a report on government requests for "
      "data.",
      "Yes, we publish a transparency report.",
      dates=[("January and July", "March and September")]),
    # ---------------- retention ----------------
    T("retention-by-plan", "retention", ["retention-1"],
      "How long are recordings kept?",
      ["How long are recordings kept?", "how far back can I see video on plus",
       "Why did last month's clips disappear?"],
      "Recordings are kept for 24 hours on Basic, 30 days on Plus, 60 days on Premier and 90 days "
      "on Business. Older recordings are deleted automatically.",
      "It depends on the plan: Basic keeps 24 hours, Plus 30 days, Premier 60 days and Business 90 "
      "days, and anything older is removed automatically.",
      "Recordings are kept for a period that depends on your plan.",
      nums=[("60 days on Premier", "90 days on Premier"), ("30 days on Plus", "14 days on Plus"),
            ("Business 90", "Business 180")]),
    T("saved-clips", "retention", ["retention-1"],
      None,
      ["Are saved clips deleted?", "how many clips can I save forever"],
      "No. Saved clips are kept until you delete them, up to 2,000 saved clips per account.",
      "Clips you save stay until you remove them yourself; each account can hold as many as 2,000 "
      "saved clips.",
      "Saved clips are not deleted automatically.",
      nums=[("2,000", "5,000")]),
    T("download", "retention", ["retention-2"],
      "Can I download my videos?",
      ["Can I download my videos?", "what format are downloaded clips in",
       "max length of a downloaded clip"],
      "Yes. Clips can be downloaded as MP4 files of up to 30 minutes each.",
      "Yes, you can download clips in MP4 format, each up to 30 minutes long.",
      "Yes, you can download your clips.",
      nums=[("30 minutes", "60 minutes")]),
    T("data-export", "retention", ["retention-2"],
      "How do I export all my data?",
      ["How do I export all my data?",
       "I requested my data export, how long is the link good for?"],
      "Request a full export under Settings > Privacy > Export my data. The export is ready within "
      "48 hours and the download link stays valid for 7 days.",
      "Go to Settings > Privacy > Export my data. We prepare the export within 48 hours, and the "
      "link works for 7 days.",
      "You can request a data export in the privacy settings.",
      nums=[("48 hours", "72 hours"), ("7 days", "30 days")]),
    T("after-cancellation", "retention", ["retention-3", "retention-1"],
      "What happens to my recordings if I cancel?",
      ["What happens to my recordings if I cancel?",
       "If I cancel Plus and come back next week will my old clips still be there?"],
      "Your account returns to Basic at the end of the paid period. Video older than 24 hours stays "
      "hidden for 14 days, so resubscribing within that time restores it; after that it is "
      "permanently deleted.",
      "After your paid period ends you're on Basic. Anything older than 24 hours is hidden but kept "
      "for 14 days: resubscribe in that window and it's back, otherwise it's deleted for good.",
      "Your recordings older than the Basic limit are eventually deleted.",
      nums=[("14 days", "30 days")]),
    T("records-retention", "retention", ["retention-4"],
      None,
      ["How long do you keep my billing history?", "Do you store chat transcripts? for how long?"],
      "Billing records are kept for 7 years to meet tax rules. Sign-in logs are kept for 12 months "
      "and support chat transcripts for 18 months.",
      "Billing records stay for 7 years because of tax law; sign-in logs are kept 12 months and "
      "support chat transcripts 18 months before deletion.",
      "Billing records, logs and chat transcripts are kept for a limited time.",
      nums=[("7 years", "10 years"), ("18 months", "6 months")]),
    T("data-residency", "retention", ["retention-5"],
      "Where is my video stored?",
      ["Where is my video stored?", "Is EU customer footage kept in Europe?",
       "since when is video stored in Frankfurt"],
      "Since 2023-09-01, video from customers in the European Union is stored only in the "
      "Frankfurt data center. Video from all other customers is stored in the Oregon and Virginia "
      "data centers.",
      "EU customers' video has been kept exclusively in Frankfurt since 2023-09-01; everyone "
      "else's is stored in Oregon and Virginia.",
      "Video is stored in Lumenfold data centers.",
      dates=[("2023-09-01", "2024-09-01")]),
    # ---------------- support ----------------
    T("support-hours", "support", ["support-1"],
      "What are your support hours?",
      ["What are your support hours?", "is support open on saturday",
       "can i call at 8pm on a tuesday?"],
      "Chat and phone support are open from 7 a.m. to 10 p.m. Eastern Time on weekdays and from 9 "
      "a.m. to 6 p.m. Eastern Time on weekends.",
      "You can reach chat and phone support Monday to Friday between 7 a.m. and 10 p.m. ET, and on "
      "Saturdays and Sundays between 9 a.m. and 6 p.m. ET.",
      "Support is open every day of the week.",
      nums=[("10 p.m.", "8 p.m."), ("9 a.m.", "10 a.m.")]),
    T("phone-number", "support", ["support-1"],
      "What is the support phone number?",
      ["What is the support phone number?", "number to call lumenfold"],
      "The support phone number is 1-800-555-0142.",
      "You can call us on 1-800-555-0142.",
      "You can call our support line during opening hours.",
      nums=[("0142", "0124")]),
    T("priority-support", "support", ["support-2"],
      "Do Premier customers get faster support?",
      ["Do Premier customers get faster support?",
       "what's the response time for critical issues on enterprise"],
      "Yes. Premier and Business customers get priority support with an average wait under 5 "
      "minutes. Enterprise customers have a 24/7 phone line and a 1-hour response time for "
      "critical issues.",
      "Premier and Business come with priority support, averaging under 5 minutes of waiting. "
      "Enterprise adds a round-the-clock phone line with a 1-hour response on critical issues.",
      "Premier customers get priority support.",
      nums=[("5 minutes", "15 minutes"), ("1-hour", "4-hour")]),
    T("email-support", "support", ["support-3"],
      None,
      ["How do I contact support by email?", "what's your support email and how fast do you answer"],
      "Email support@lumenfold.example and we reply within 1 business day.",
      "Write to support@lumenfold.example and you'll get a reply within 1 business day.",
      "You can email the support team.",
      nums=[("1 business day", "3 business days")]),
    T("ticket-closure", "support", ["support-3"],
      None,
      ["Why was my support ticket closed?", "does my ticket stay open if I don't answer"],
      "Tickets with no reply from the customer are closed after 10 days. Replies to an existing "
      "ticket keep the same ticket number.",
      "If we don't hear back from you, a ticket is closed after 10 days; replying to an existing "
      "ticket keeps its ticket number.",
      "Tickets are closed if you do not reply.",
      nums=[("10 days", "5 days")]),
    T("support-holidays", "support", ["support-4"],
      "Is support open on holidays?",
      ["Is support open on holidays?", "Can I reach support on New Year's Eve?",
       "are you open on the 4th of July"],
      "Support is closed on January 1, July 4, Thanksgiving Day and December 25. On December 24 "
      "and December 31 it closes early at 3 p.m. Eastern Time.",
      "We're closed on January 1, July 4, Thanksgiving Day and December 25, and on December 24 and "
      "December 31 we close early, at 3 p.m. Eastern.",
      "Support is closed on some public holidays.",
      nums=[("3 p.m.", "5 p.m.")],
      dates=[("July 4", "July 5"), ("December 31", "December 30")]),
    T("status-page", "support", ["support-5"],
      "Where can I check if the service is down?",
      ["Where can I check if the service is down?", "when do you do maintenance",
       "is there a status page"],
      "Service status, including planned maintenance, is published at status.lumenfold.example. "
      "Planned maintenance is announced at least 72 hours in advance and usually takes place on "
      "Tuesdays between 1 a.m. and 3 a.m. Eastern Time.",
      "Check status.lumenfold.example for outages and maintenance. We announce planned maintenance "
      "72 hours or more ahead, and it normally runs on Tuesdays from 1 a.m. to 3 a.m. ET.",
      "You can check the status page for outages.",
      nums=[("72 hours", "24 hours")],
      dates=[("Tuesdays", "Sundays")]),
    # ---------------- general ----------------
    T("company", "general", ["about-1"],
      None,
      ["When was Lumenfold founded?", "how big is your company"],
      "Lumenfold Home Systems was founded on April 12, 2016. It employs about 340 people and "
      "serves more than 1.2 million homes in 30 countries.",
      "Lumenfold started on April 12, 2016; today about 340 employees serve over 1.2 million homes "
      "across 30 countries.",
      "Lumenfold is a home security company.",
      nums=[("1.2 million", "2.1 million"), ("340", "430")],
      dates=[("April 12, 2016", "April 21, 2016")]),
]

TOPIC = {t["id"]: t for t in TOPICS}

# --------------------------------------------------------------------------
# Answers in other languages and scripts (question and/or answer).
# (topic, language tag, question or None to keep an English one, answer)
# --------------------------------------------------------------------------

NON_ASCII = [
    ("plus-price", "es", "¿Cuánto cuesta el plan Plus al mes?",
     "El plan Plus cuesta $9.99 al mes o $99.99 al año y guarda 30 días de historial de vídeo para "
     "hasta 5 cámaras."),
    ("international", "es", "¿Hacen envíos a España? ¿Tendré que pagar aduanas?",
     "Sí, enviamos a los 27 países de la Unión Europea. El envío internacional cuesta $19.95 y "
     "tarda de 7 a 14 días hábiles; los aranceles ya están pagados en los pedidos a la UE."),
    ("return-policy", "de", "Kann ich eine bereits geöffnete Kamera zurückgeben?",
     "Ja, innerhalb von 30 Tagen nach der Lieferung. Für geöffnete, nicht defekte Geräte fällt eine "
     "Rücknahmegebühr von 15 % an; Zubehör und Originalverpackung müssen beiliegen."),
    ("vat", "de", "Wie viel Mehrwertsteuer zahle ich in Deutschland für mein Abo?",
     "Die Preise verstehen sich ohne Steuer. Für Kundinnen und Kunden in Deutschland werden 19 % "
     "Mehrwertsteuer aufgeschlagen."),
    ("encryption", "fr", "Est-ce que mes vidéos sont chiffrées ?",
     "Oui. Les vidéos sont chiffrées en transit avec TLS 1.3 et au repos avec AES-256. Les abonnés "
     "Plus et Premier peuvent aussi activer le chiffrement de bout en bout."),
    ("delete-account", "fr", "Comment supprimer mon compte ? Puis-je changer d'avis ?",
     "Allez dans Settings > Account > Delete account. Vous disposez d'un délai de grâce de 7 jours "
     "pour annuler ; ensuite, toutes les données, y compris les enregistrements, sont définitivement "
     "effacées sous 30 jours."),
    ("retention-by-plan", "zh", "录像会保存多久？",
     "录像的保存时间取决于套餐：Basic 保存 24 小时，Plus 保存 30 天，Premier 保存 60 天，Business 保存 "
     "90 天。更早的录像会被自动删除。"),
    ("battery", "zh", "户外摄像头的电池能用多久？",
     "在默认设置下，Cam Outdoor 的电池最长可使用 6 个月，通过 USB-C 充满电大约需要 5 小时。"),
    ("support-hours", "ja", "サポートの受付時間を教えてください。",
     "チャットと電話のサポートは、平日は東部時間の午前7時から午後10時まで、土日は午前9時から午後6時まで"
     "受け付けています。"),
    ("holiday-cutoff", "ja", None,
     "2024年12月24日までにお届けするには、通常配送は2024年12月16日まで、速達は2024年12月20日までに"
     "ご注文ください。"),
    ("two-factor", "ar", "هل تدعمون المصادقة الثنائية؟",
     "نعم. يمكن استخدام المصادقة الثنائية عبر تطبيق المصادقة أو رموز SMS، ويحصل كل حساب على 10 رموز "
     "احتياطية تُستخدم مرة واحدة."),
    ("subscription-refund", "ar", "هل يمكنني استرداد أموال اشتراكي السنوي؟",
     "نعم، تُسترد الاشتراكات السنوية بالكامل إذا أُلغيت خلال 14 يومًا من الشراء أو التجديد. أما "
     "الاشتراكات الشهرية فلا تُسترد، لكن يمكن إلغاؤها في أي وقت."),
    ("free-trial", "ru", "Есть ли бесплатный пробный период?",
     "Да. Каждый новый аккаунт может один раз бесплатно попробовать Premier в течение 30 дней. Если "
     "отменить пробный период до его окончания, оплата не списывается, а за 3 дня до первого "
     "платежа приходит напоминание."),
    ("lockout", "ru", "Почему мой аккаунт заблокирован?",
     "После 5 неудачных попыток входа подряд аккаунт блокируется на 15 минут. Пароль должен "
     "содержать не менее 12 символов."),
    ("offline-recording", "ko", "인터넷이 끊겨도 카메라가 녹화되나요?",
     "네. 인터넷이 끊겨도 카메라는 허브에 계속 녹화하며(microSD 최대 256 GB), 연결이 복구되면 영상이 "
     "클라우드에 업로드됩니다."),
    ("shipping-cost", "pt", "Quanto custa o frete?",
     "O frete padrão é grátis para pedidos acima de $35 nos Estados Unidos contíguos; pedidos "
     "menores pagam $5.95. O frete expresso custa $14.95 e entrega em 1 a 2 dias úteis."),
    ("plus-price-change", "emoji", "why did my Plus price go up?? 😤💸",
     "On March 3, 2024 📅 the monthly Plus price rose from $8.99 to $9.99 💵. If you subscribed "
     "before that date, you kept the old price until your first renewal on or after June 1, 2024 ✅"),
    ("lost-parcel", "emoji", "📦 my package arrived damaged 😢 what do I do?",
     "Sorry about that! 🙏 Report it within 14 days of the delivery date shown in tracking and "
     "we'll ship a replacement at no charge 🚚✨"),
    ("factory-reset", "el",
     "Πώς κάνω επαναφορά εργοστασιακών ρυθμίσεων σε μια κάμερα πριν την πουλήσω;",
     "Αφαιρέστε πρώτα τη συσκευή από τον λογαριασμό σας στην εφαρμογή και μετά κρατήστε πατημένο το "
     "κουμπί επαναφοράς για 10 δευτερόλεπτα, μέχρι η λυχνία να αναβοσβήσει πορτοκαλί."),
    ("data-residency", "he", "איפה נשמרים הסרטונים שלי?",
     "מאז 2023-09-01, סרטונים של לקוחות באיחוד האירופי נשמרים רק במרכז הנתונים בפרנקפורט. סרטונים "
     "של כל שאר הלקוחות נשמרים במרכזי הנתונים באורגון ובווירג'יניה."),
    ("enterprise-minimum", "hi", "एंटरप्राइज़ अनुबंध के लिए न्यूनतम राशि क्या है?",
     "एंटरप्राइज़ अनुबंधों के लिए प्रति वर्ष $10,000 की न्यूनतम राशि है, और इनमें एक समर्पित अकाउंट "
     "मैनेजर तथा 99.95% मासिक अपटाइम की प्रतिबद्धता शामिल है।"),
    ("address-change", "it", "Posso cambiare l'indirizzo di spedizione dopo aver ordinato?",
     "Sì, entro 60 minuti dall'ordine puoi modificarlo nella pagina Orders. Dopo, contatta "
     "l'assistenza; una volta spedito, l'ordine non può più essere reindirizzato."),
    ("support-access", "es", None,
     "Solo si usted concede el acceso en la aplicación. El acceso dura 72 horas y puede revocarse en "
     "cualquier momento en Settings > Privacy > Support access."),
    ("weatherproof", "de", "Hält die Außenkamera Frost aus? Bei uns wird es bis zu −15 °C kalt.",
     "Ja. Die Cam Outdoor und die Doorbell Pro sind nach IP65 geschützt und funktionieren von -4°F "
     "bis 122°F (-20 °C bis 50 °C)."),
    ("phone-number", "tr", "Destek telefon numaranız nedir?",
     "Destek hattımız 1-800-555-0142. Hafta içi Doğu Saati ile 07:00–22:00 arasında "
     "ulaşabilirsiniz."),
    ("privacy-policy", "zh", "你们会出售我的数据吗？",
     "不会。Lumenfold 从不出售客户数据，也不会用视频录像来训练 AI 模型。"),
]

# --------------------------------------------------------------------------
# Material for the other quality kinds.
# --------------------------------------------------------------------------

# Plausible but unsupported claims (nothing in knowledge.md says these).
INVENTED = {
    "billing": ["Customers who stay subscribed for 24 months also receive a one-time $20 loyalty "
                "credit.",
                "Paying with a gift card earns an extra 5% bonus credit on your balance.",
                "Billing disputes are always resolved within 3 business days."],
    "devices": ["Since July 1, 2024, every Cam Outdoor ships with a free solar panel.",
                "Night vision reaches up to 40 feet on all Lumenfold cameras.",
                "The Hub also has a backup battery that lasts 8 hours."],
    "shipping": ["Orders over $150 are upgraded to express shipping automatically.",
                 "Saturday delivery is also available for an extra $9.95.",
                 "All parcels have been shipped carbon-neutral since January 1, 2023."],
    "returns": ["Refunds above $300 can be taken as store credit with a 10% bonus.",
                "Premier subscribers get a longer 60-day return window.",
                "Returned items are inspected within 24 hours of arriving at the warehouse."],
    "accounts": ["Each home can also have up to 2 additional owners with full admin rights.",
                 "Account names can be changed once every 90 days.",
                 "Every account gets a free security review every 6 months."],
    "security": ["Lumenfold passed an independent SOC 2 Type II audit on May 5, 2024.",
                 "Biometric sign-in has been available since August 20, 2024.",
                 "All staff laptops are replaced every 18 months for security reasons."],
    "retention": ["Deleted recordings can still be recovered by support for 45 days.",
                  "A backup copy of every recording is kept in a second region for 180 days.",
                  "Exports larger than 50 GB are split into several files."],
    "support": ["Callbacks can be scheduled up to 14 days in advance.",
                "Live chat is available in 12 languages.",
                "Every chat is reviewed by a supervisor within 48 hours."],
    "general": ["Lumenfold opened a second headquarters on June 3, 2022.",
                "The company has won 7 industry design awards since 2019."],
}

# Answers to something else entirely.
OFF_TOPIC = [
    "The best way to keep a sourdough starter healthy is to feed it equal weights of flour and "
    "water once a day.",
    "Sure! Here is a haiku about autumn: crisp leaves drift and fall, the porch light hums in the "
    "dusk, tea cools by the door.",
    "Mount Everest is the highest mountain above sea level, at roughly 8,849 meters.",
    "To convert Celsius to Fahrenheit, multiply by 9/5 and then add 32.",
    "The weather this weekend looks mostly sunny, with a chance of showers on Sunday afternoon.",
    "Photosynthesis converts light energy into chemical energy that plants store as glucose.",
    "The capital of Australia is Canberra, not Sydney as many people assume.",
    "Succulents need very little water; wait until the soil is completely dry before watering.",
    "Chess openings such as the Sicilian Defence are popular at every level of play.",
    "A good rule of thumb for running is to increase your weekly distance by no more than ten "
    "percent.",
    "I can recommend a few podcasts about productivity if you are interested in that topic.",
    "Our blog recently published ten tips for organizing your garage before winter.",
]

FILLER_GENERIC = [
    "I know policies like this can feel confusing at first, so it helps to look at them one step "
    "at a time.",
    "Many customers ask about this, and it is a perfectly reasonable thing to want to understand "
    "before making a decision.",
    "If you ever want to double-check the details, the Lumenfold app and the help center describe "
    "the same rules in their own words.",
    "It is also worth keeping your account information and contact details up to date, because "
    "that makes every part of the process smoother.",
    "In my experience, most questions of this kind are resolved quickly once the relevant details "
    "are in front of you.",
    "Of course, everyone's situation is a little different, and what matters most is what works "
    "for your home and your household.",
    "Some people like to read through the whole policy once, while others prefer to check only the "
    "part that affects them right now.",
    "Either approach is fine, and there is no wrong way to go about it as long as you know where "
    "to find the information.",
    "To put it another way, the rules are designed to be predictable, so that you can plan ahead "
    "without surprises.",
    "Our team reviews these policies regularly and tries to keep them simple, fair and consistent "
    "across plans and devices.",
    "If anything about your account looks different from what you expected, it is usually worth "
    "taking a moment to review your settings.",
    "Many customers find it useful to write down the key points somewhere handy, such as a note on "
    "their phone.",
    "It can also help to share the relevant details with other people in your household who use "
    "the cameras.",
    "None of this requires any special technical knowledge, and the app walks you through each "
    "step when you need it.",
    "Thinking about it a bit more, the main thing to remember is to act within the stated time "
    "frames where they apply.",
    "Customers sometimes worry that they have missed something, but the process is usually more "
    "forgiving than it first appears.",
    "Please feel free to come back with follow-up questions at any time, since it is always better "
    "to ask than to guess.",
    "Home security is a very personal topic, and it is natural to want certainty about how "
    "everything works.",
    "Lumenfold tries to make these answers consistent whether you read them in the app, by email "
    "or in chat.",
    "Again, the short answer is the one given at the start, and everything else here is simply "
    "additional background.",
    "It is easy to overthink this kind of thing, but the underlying idea is really quite "
    "straightforward once you see it laid out.",
    "Sometimes the wording in a policy sounds more formal than the practical effect, which is "
    "usually simple and sensible.",
    "A lot of customers tell us that having the answer in one place saves them from searching "
    "through several pages of settings.",
    "If you are helping a relative or a neighbour with their setup, the same explanation applies "
    "to their account as well.",
    "It never hurts to keep the confirmation emails you receive from Lumenfold, in case you want "
    "to look something up later.",
    "We also try to mention anything important inside the app itself, so you are not caught off "
    "guard by a change.",
    "Of course, if something does not behave the way it is described here, that is exactly the "
    "kind of thing support wants to hear about.",
    "Looking at the bigger picture, the goal is simply that your cameras keep your home safe "
    "without you having to think about them much.",
]

FILLER_SUITE = {
    "billing": ["Billing questions are among the most common ones we see, especially around renewal "
                "time.",
                "Your billing history in the app lists every charge together with its receipt.",
                "If you manage several homes, it is worth checking which plan each home is on."],
    "devices": ["Placing the Hub and cameras in good spots makes a big difference to reliability.",
                "Restarting a device is often the quickest fix for small glitches.",
                "The app shows the health of each device, including signal strength and battery "
                "status."],
    "shipping": ["Carriers sometimes update tracking information with a delay, especially during "
                 "busy periods.",
                 "Keeping an eye on the tracking page is the easiest way to know when to expect "
                 "your parcel.",
                 "The packaging is designed to protect the devices, so it is worth keeping it until "
                 "everything is set up."],
    "returns": ["Keeping the original box and accessories makes any return or exchange much "
                "simpler.",
                "Our warehouse team checks every return carefully before the refund is processed.",
                "If you are unsure whether an item is defective, support can help you troubleshoot "
                "it first."],
    "accounts": ["Your account is the key to all of your homes, devices and recordings, so it is "
                 "worth keeping it tidy.",
                 "Using a unique password and a recovery email you can access keeps your account "
                 "safe.",
                 "Guests and family members each benefit from having their own login rather than "
                 "sharing one."],
    "security": ["Security settings are easiest to manage when you review them every so often.",
                 "Turning on every protection available to your plan is a good habit.",
                 "Being careful with links in unexpected emails also protects your account."],
    "retention": ["Deciding which clips to save is a personal choice, and many people save only "
                  "important events.",
                  "Downloading copies of clips you care about gives you an extra backup of your "
                  "own.",
                  "Retention rules apply automatically, so there is nothing you need to do to keep "
                  "them working."],
    "support": ["Our support team is glad to walk you through any of these steps over chat or "
                "phone.",
                "Having your account email and device details ready makes any support contact "
                "faster.",
                "The help center also has articles on most common questions."],
    "general": ["Lumenfold has grown steadily over the years while keeping the same focus on home "
                "security.",
                "The company publishes news about products and policies on its blog and in the "
                "app."],
}

HEDGES = [
    "I'm not 100% sure, but here is what I believe: {a} Details may differ for some accounts.",
    "{a} That said, this might possibly have changed, so you may want to check the app.",
    "As far as I know, and I might be wrong here: {a}",
    "This is possibly what you're looking for. {a} It may be worth confirming with support.",
]

POLITE = [
    "Happy to help! {a} Please let me know if there's anything else I can do.",
    "Sorry for the trouble. {a} Please don't hesitate to reach out again.",
    "Thanks for reaching out, I'm happy to help with that. {a}",
    "I'm sorry for any confusion. {a} Please feel free to ask if anything is unclear, happy to "
    "help!",
]

MAIN_KINDS = ["exact", "paraphrase", "missing_facts", "wrong_number", "wrong_date",
              "invented_claim", "off_topic", "empty", "very_long", "non_ascii"]
SMALL_KINDS = ["hedged", "polite"]
KINDS = MAIN_KINDS + SMALL_KINDS

KIND_DESCRIPTIONS = {
    "exact": "identical to `expected_answer` up to case and whitespace",
    "paraphrase": "correct, same facts, different wording",
    "missing_facts": "correct but leaves out the key facts (prices, durations, ...)",
    "wrong_number": "one price, quantity or percentage changed",
    "wrong_date": "one date (or day/month) changed",
    "invented_claim": "the expected answer plus a plausible fact that no context supports",
    "off_topic": "answers something else entirely",
    "empty": "the empty string",
    "very_long": "a correct answer padded to 3,000+ characters with on-topic rambling",
    "non_ascii": "question and/or answer in another language or script (accents, CJK, "
                 "right-to-left, emoji)",
    "hedged": "correct answer wrapped in \"may\", \"might\", \"possibly\"",
    "polite": "correct answer with \"happy to help\", \"sorry\", \"please\"",
}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _sentences(text: str) -> list[str]:
    return _SENTENCE_END.split(text)


# --------------------------------------------------------------------------
# Case construction
# --------------------------------------------------------------------------


class Builder:
    def __init__(self) -> None:
        self.rng = random.Random(SEED)
        self.question_turn: Counter[str] = Counter()
        order = [t["id"] for t in TOPICS]
        self.rng.shuffle(order)
        self.topic_cycle = order
        self.topic_pos = 0
        self.cases: list[dict] = []

    # -- helpers ---------------------------------------------------------
    def next_topic(self) -> dict:
        tid = self.topic_cycle[self.topic_pos % len(self.topic_cycle)]
        self.topic_pos += 1
        return TOPIC[tid]

    def question(self, topic: dict) -> str:
        n = self.question_turn[topic["id"]]
        self.question_turn[topic["id"]] += 1
        return topic["qs"][n % len(topic["qs"])]

    def contexts(self, topic: dict) -> tuple[list[str], bool]:
        ids = list(topic["ctx"])
        distractor = False
        if len(ids) < 4 and self.rng.random() < 0.3:
            own = {PASSAGE_SECTION[p] for p in ids}
            pool = [p for p in PASSAGES if PASSAGE_SECTION[p] not in own]
            ids.append(self.rng.choice(pool))
            distractor = True
        if len(ids) > 1 and self.rng.random() < 0.3:
            ids = ids[1:] + ids[:1]
        return [PASSAGES[p] for p in ids], distractor

    def add(self, topic: dict, kind: str, answer: str, question: str | None = None,
            extra_tags: list[str] | None = None) -> None:
        contexts, distractor = self.contexts(topic)
        tags = [f"quality:{kind}", f"topic:{topic['id']}",
                "faq" if topic["faq"] else "no-faq"]
        if distractor:
            tags.append("distractor")
        tags += extra_tags or []
        self.cases.append({
            "question": question if question is not None else self.question(topic),
            "expected_answer": topic["exp"],
            "contexts": contexts,
            "answer": answer,
            "suite": topic["suite"],
            "tags": tags,
            "quality": kind,
        })

    # -- kinds -----------------------------------------------------------
    def exact(self, n: int) -> None:
        shapes = [
            lambda s: s,
            lambda s: s.lower(),
            lambda s: "  " + s + "\n",
            lambda s: s.replace(". ", ".  "),
            lambda s: s,
            lambda s: s.replace(". ", ".\n"),
            lambda s: s.upper(),
            lambda s: "\t" + s.replace(", ", ",  ") + " ",
        ]
        for i in range(n):
            t = self.next_topic()
            self.add(t, "exact", shapes[i % len(shapes)](t["exp"]))

    def paraphrase(self, n: int) -> None:
        for _ in range(n):
            t = self.next_topic()
            self.add(t, "paraphrase", t["para"])

    def missing_facts(self, n: int) -> None:
        for _ in range(n):
            t = self.next_topic()
            self.add(t, "missing_facts", t["miss"])

    def _substituted(self, n: int, field: str, kind: str) -> None:
        pairs = [(t, pair) for t in TOPICS for pair in t[field]]
        self.rng.shuffle(pairs)
        for i in range(n):
            t, (orig, wrong) = pairs[i % len(pairs)]
            bases = [t["exp"], t["para"]] if i % 2 == 0 else [t["para"], t["exp"]]
            base = next((b for b in bases if orig in b), None)
            if base is None:
                raise AssertionError(f"{t['id']}: {orig!r} is in neither answer")
            answer = base.replace(orig, wrong, 1)
            assert answer != base
            self.add(t, kind, answer, extra_tags=[f"changed:{orig}->{wrong}"])

    def wrong_number(self, n: int) -> None:
        self._substituted(n, "nums", "wrong_number")

    def wrong_date(self, n: int) -> None:
        self._substituted(n, "dates", "wrong_date")

    def invented_claim(self, n: int) -> None:
        used: Counter[str] = Counter()
        for i in range(n):
            t = self.next_topic()
            pool = INVENTED[t["suite"]]
            claim = pool[used[t["suite"]] % len(pool)]
            used[t["suite"]] += 1
            base = t["exp"] if i % 3 else t["para"]
            parts = _sentences(base)
            if i % 2 and len(parts) > 1:
                answer = " ".join(parts[:1] + [claim] + parts[1:])
            else:
                answer = base + " " + claim
            self.add(t, "invented_claim", answer)

    def off_topic(self, n: int) -> None:
        for i in range(n):
            t = self.next_topic()
            if i % 2 == 0:
                answer = OFF_TOPIC[(i // 2) % len(OFF_TOPIC)]
            else:
                others = [o for o in TOPICS if o["suite"] != t["suite"]]
                answer = others[(i * 7) % len(others)]["exp"]
            self.add(t, "off_topic", answer)

    def empty(self, n: int) -> None:
        for _ in range(n):
            self.add(self.next_topic(), "empty", "")

    def very_long(self, n: int) -> None:
        for i in range(n):
            t = self.next_topic()
            base = t["exp"] if i % 2 == 0 else t["para"]
            pool = FILLER_GENERIC + FILLER_SUITE[t["suite"]]
            self.rng.shuffle(pool)
            parts = [base]
            j = 0
            while len(" ".join(parts)) < 3000:
                parts.append(pool[j % len(pool)])
                j += 1
            parts.append("So, to sum up: " + t["exp"])
            self.add(t, "very_long", " ".join(parts))

    def non_ascii(self) -> None:
        for tid, lang, question, answer in NON_ASCII:
            self.add(TOPIC[tid], "non_ascii", answer, question=question,
                     extra_tags=[f"lang:{lang}"])

    def wrapped(self, n: int, kind: str, templates: list[str]) -> None:
        for i in range(n):
            t = self.next_topic()
            base = t["exp"] if i % 2 == 0 else t["para"]
            self.add(t, kind, templates[i % len(templates)].format(a=base))

    # -- all -------------------------------------------------------------
    def build(self) -> list[dict]:
        n = CASES_PER_KIND
        self.exact(n)
        self.paraphrase(n)
        self.missing_facts(n)
        self.wrong_number(n)
        self.wrong_date(n)
        self.invented_claim(n)
        self.off_topic(n)
        self.empty(n)
        self.very_long(n)
        self.non_ascii()
        self.wrapped(SMALL_KIND_CASES, "hedged", HEDGES)
        self.wrapped(SMALL_KIND_CASES, "polite", POLITE)

        # A few nulls to exercise metrics that cannot be computed.
        for kind in ["paraphrase", "off_topic", "empty", "very_long", "invented_claim"]:
            case = [c for c in self.cases if c["quality"] == kind][-1]
            case["expected_answer"] = None
            case["tags"].append("null:expected_answer")
        for kind in ["missing_facts", "wrong_number", "wrong_date", "non_ascii", "polite"]:
            case = [c for c in self.cases if c["quality"] == kind][-2]
            case["contexts"] = None
            case["tags"].append("null:contexts")

        self.rng.shuffle(self.cases)
        for i, case in enumerate(self.cases, start=1):
            case["case_id"] = f"sup-{i:04d}"
            case["messages"] = None
        self.conversations()
        return self.cases

    def conversations(self) -> None:
        """A few cases become conversations: earlier turns before the question
        (chosen without the random generator, so every other field stays as it was)."""
        chosen = [c for c in self.cases if c["quality"] in ("exact", "paraphrase")
                  and c["contexts"] is not None and c["expected_answer"] is not None]
        chosen = chosen[:CONVERSATIONS]
        for k, case in enumerate(chosen):
            name, plan = CONVERSATION_PEOPLE[k % len(CONVERSATION_PEOPLE)]
            turns = [{"role": "user", "content": f"Hi, I'm {name}; I have the {plan} plan."},
                     {"role": "assistant",
                      "content": f"Hello {name}, happy to help. What would you like to know?"}]
            if k % 2:  # a longer history: an earlier question on another topic
                other = chosen[(k + 1) % len(chosen)]
                turns += [{"role": "user", "content": other["question"]},
                          {"role": "assistant", "content": other["expected_answer"]}]
            case["messages"] = turns
            case["tags"].append("conversation")


CONVERSATIONS = 6  # cases with earlier turns (a `messages` history)
CONVERSATION_PEOPLE = [("Dana", "Plus"), ("Kenji", "Premier"), ("Amara", "Basic")]

CASE_SCHEMA = pa.schema([
    ("case_id", pa.string()),
    ("question", pa.string()),
    ("expected_answer", pa.string()),
    ("contexts", pa.list_(pa.string())),
    ("answer", pa.string()),
    ("suite", pa.string()),
    ("tags", pa.list_(pa.string())),
    ("quality", pa.string()),
    ("messages", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
])

FAQ_SCHEMA = pa.schema([("question", pa.string()), ("answer", pa.string())])


def faq_entries() -> list[tuple[str, str]]:
    return [(t["faq"], t["exp"]) for t in TOPICS if t["faq"]]


def faq_csv(entries: list[tuple[str, str]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(["question", "answer"])
    writer.writerows(entries)
    return buf.getvalue()


def readme(cases: list[dict], faq_count: int, words: int) -> str:
    counts = Counter(c["quality"] for c in cases)
    suites = Counter(c["suite"] for c in cases)
    null_exp = sum(c["expected_answer"] is None for c in cases)
    null_ctx = sum(c["contexts"] is None for c in cases)
    no_faq = sum("no-faq" in c["tags"] for c in cases)
    lines = [
        "# Example: customer support for Lumenfold Home Systems",
        "",
        "Lumenfold Home Systems is a **fictional** company (any resemblance to a real brand is "
        "accidental). It sells home security cameras, a video doorbell and a Hub, and runs the "
        "Lumenfold Cloud video subscription (Basic, Plus, Premier, Business, Enterprise). The "
        "support domain covers plans and billing, shipping, returns and warranty, accounts, "
        "security and privacy, data retention, support hours and devices.",
        "",
        "All files here are generated by `make_example.py`; do not edit them by hand.",
        "",
        "## Files",
        "",
        f"- `knowledge.md`: the support knowledge base (about {words:,} words), one fact-dense "
        "paragraph per passage: prices, percentages, quantities, durations and dates in both "
        "\"March 3, 2024\" and ISO \"2025-01-15\" styles.",
        f"- `faq.parquet` / `faq.csv`: {faq_count} FAQ entries, columns `question`, `answer`, "
        "consistent with the knowledge base (for the `faq` bot).",
        f"- `cases.parquet`: {len(cases)} evaluation cases with columns `case_id`, `question`, "
        "`expected_answer`, `contexts` (list of passages copied verbatim from `knowledge.md`, "
        "sometimes with one distractor passage from another section), `answer` (a recorded "
        "assistant answer, for the `precomputed` bot), `suite`, `tags`, `quality` and "
        "`messages` (the earlier turns of a conversation, `[{role, content}]`, or null).",
        "- `make_example.py`: the deterministic generator.",
        "",
        "Questions are natural user phrasings: some are FAQ questions almost word for word, many "
        f"are looser paraphrases, and {no_faq} cases ask about facts the FAQ does not cover "
        "(tag `no-faq`). Cases of every quality carry the tags `quality:<kind>`, `topic:<id>` "
        "and `faq`/`no-faq`; extra tags are `distractor`, `lang:<code>`, `changed:<old>-><new>`, "
        "`null:expected_answer` and `null:contexts`.",
        "",
        f"{sum(c['messages'] is not None for c in cases)} cases are conversations (tag "
        "`conversation`): a greeting and, for some, an earlier question come before the "
        "question; remote bots receive those turns in order and the judge's conversation "
        "metrics read them.",
        "",
        f"{null_exp} cases have a null `expected_answer` and {null_ctx} a null `contexts`, to "
        "exercise metrics that cannot be computed. No case has an empty question.",
        "",
        "## Recorded answer quality",
        "",
        "| quality | cases | the recorded `answer` is ... |",
        "|---|---:|---|",
    ]
    for kind in KINDS:
        lines.append(f"| `{kind}` | {counts[kind]} | {KIND_DESCRIPTIONS[kind]} |")
    lines += [
        f"| total | {len(cases)} | |",
        "",
        "Cases per suite: " + ", ".join(f"{s} {suites[s]}" for s in sorted(suites)) + ".",
        "",
        "## Regenerate",
        "",
        "```",
        "python examples/support/make_example.py            # writes into examples/support/",
        "python examples/support/make_example.py /tmp/out   # or into another directory",
        "```",
        "",
        "The generator uses only the standard library and pyarrow, with a fixed seed: running it "
        "twice gives byte-identical files (`tests/test_example_data.py` checks this).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent
    out.mkdir(parents=True, exist_ok=True)

    knowledge = knowledge_markdown()
    (out / "knowledge.md").write_bytes(knowledge.encode("utf-8"))

    entries = faq_entries()
    faq = pa.table({"question": [q for q, _ in entries], "answer": [a for _, a in entries]},
                   schema=FAQ_SCHEMA)
    pq.write_table(faq, out / "faq.parquet", compression="snappy")
    (out / "faq.csv").write_bytes(faq_csv(entries).encode("utf-8"))

    cases = Builder().build()
    for case in cases:
        for passage in case["contexts"] or []:
            assert passage in knowledge, passage
    table = pa.table({name: [c[name] for c in cases] for name in CASE_SCHEMA.names},
                     schema=CASE_SCHEMA)
    pq.write_table(table, out / "cases.parquet", compression="snappy")

    words = len(knowledge.split())
    (out / "README.md").write_bytes(readme(cases, len(entries), words).encode("utf-8"))

    counts = Counter(c["quality"] for c in cases)
    print(f"wrote {out}: {words} words of knowledge, {len(entries)} FAQ entries, "
          f"{len(cases)} cases " + ", ".join(f"{k}={counts[k]}" for k in KINDS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
