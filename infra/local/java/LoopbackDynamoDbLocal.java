/*
 * DynamoDB Local, listening on 127.0.0.1 only.
 *
 * DynamoDB Local (1.25.1) has no option for the address it listens on: its DynamoDBProxyServer makes a Jetty
 * Server(port), whose connector binds every interface, so anyone who reached the port could write an admin key
 * into the local stack's tables. This main does what DynamoDB Local's own main does (the same command-line
 * arguments, the same server), and sets the server's connectors to 127.0.0.1 before it starts. When it cannot
 * (a later DynamoDB Local changed the field or the connector), it exits with status 3 and says why: the stack
 * refuses to start rather than listen on every interface.
 *
 * Built for Java 8 and later with `npm run build:dynamodb-launcher` (javac; the .class beside this file is
 * kept in the repository, so a machine with only a Java runtime runs it). infra/local/dynamodb-local.ts runs it.
 */
import com.amazonaws.services.dynamodbv2.local.main.ServerRunner;
import com.amazonaws.services.dynamodbv2.local.server.DynamoDBProxyServer;
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public final class LoopbackDynamoDbLocal {
  static final String HOST = "127.0.0.1";

  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Server server;
    try {
      Field field = DynamoDBProxyServer.class.getDeclaredField("server");
      field.setAccessible(true);
      server = (Server) field.get(proxy);
    } catch (ReflectiveOperationException | ClassCastException e) {
      refuse("its server could not be reached (" + e + ")");
      return;
    }
    Connector[] connectors = server.getConnectors();
    if (connectors.length == 0) refuse("its server has no connector");
    for (Connector connector : connectors) {
      if (!(connector instanceof ServerConnector)) refuse("its connector is a " + connector.getClass().getName());
      ((ServerConnector) connector).setHost(HOST);
    }
    proxy.start();
  }

  private static void refuse(String why) {
    System.err.println("DynamoDB Local cannot be bound to " + HOST + ": " + why + ". Not started.");
    System.exit(3);
  }
}
